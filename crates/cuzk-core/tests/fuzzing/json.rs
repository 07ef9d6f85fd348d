//! JSON-structure-aware mutations for the fuzz tests (`fuzzing/mod.rs`):
//! included (`#[path]`) next to it by the crates whose inputs are JSON, as
//! `mod fuzz_json;`.
#![allow(dead_code)]

use crate::fuzzing::{mutate_bytes, Rng};
use serde_json::Value;

/// A JSON value that tends to break a typed reader.
fn interesting_json(rng: &mut Rng) -> Value {
    match rng.below(20) {
        0 => Value::Null,
        1 => Value::Bool(rng.one_in(2)),
        2 => Value::from(-1),
        3 => Value::from(i64::MIN),
        4 => Value::from(1e300),
        5 => Value::from(0.5),
        6 => Value::from(""),
        7 => Value::from("x".repeat(1 + rng.below(300))),
        8 => Value::Array(Vec::new()),
        9 => Value::Object(Default::default()),
        10 => Value::from(vec![0xffu8; 32]),
        11 => Value::from(vec![0u8; 32]),
        12 => Value::from(rng.bytes(32)),
        13 => Value::from(vec![0xffu8; 31 + 2 * rng.below(2)]),
        14 => {
            // A 32-byte value just at or over the BLS12-381 scalar modulus.
            let mut modulus = [
                0x01, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x5b, 0xfe, 0xff, 0x02, 0xa4, 0xbd,
                0x53, 0x05, 0xd8, 0xa1, 0x09, 0x08, 0xd8, 0x39, 0x33, 0x48, 0x7d, 0x9d, 0x29, 0x53, 0xa7,
                0xed, 0x73,
            ];
            modulus[0] += rng.below(3) as u8;
            Value::from(modulus.to_vec())
        }
        15 => {
            // Nesting (serde_json stops at depth 128).
            let mut v = Value::from(1);
            for _ in 0..rng.below(200) {
                v = Value::Array(vec![v]);
            }
            v
        }
        _ => Value::from(rng.interesting_u64()),
    }
}

fn count_nodes(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(count_nodes).sum(),
        Value::Object(map) => map.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// The `n`th node of `value` in pre-order (`n < count_nodes(value)`).
fn nth_node(value: &mut Value, mut n: usize) -> &mut Value {
    let mut node = value;
    loop {
        if n == 0 {
            return node;
        }
        n -= 1;
        let children: Vec<&mut Value> = match node {
            Value::Array(items) => items.iter_mut().collect(),
            Value::Object(map) => map.values_mut().collect(),
            _ => unreachable!("n is below the node count"),
        };
        let mut next = None;
        for child in children {
            let size = count_nodes(child);
            if n < size {
                next = Some(child);
                break;
            }
            n -= size;
        }
        node = next.expect("n is below the node count");
    }
}

/// A random node of `value`: half the time one drawn uniformly from all
/// its nodes (most are the bytes of 32-byte values, deep in the proofs),
/// else the end of a walk from the root to a depth drawn from 0..24 (or to
/// a leaf), which reaches the few shallow fields and whole subtrees.
fn random_node<'a>(rng: &mut Rng, value: &'a mut Value) -> &'a mut Value {
    if rng.one_in(2) {
        let n = rng.below(count_nodes(value));
        return nth_node(value, n);
    }
    walk(rng, value)
}

/// The end of a walk from the root to a depth drawn from 0..24 (or to a
/// leaf).
fn walk<'a>(rng: &mut Rng, value: &'a mut Value) -> &'a mut Value {
    let depth = rng.below(24);
    let mut node = value;
    for _ in 0..depth {
        let children = match &*node {
            Value::Array(items) => items.len(),
            Value::Object(map) => map.len(),
            _ => 0,
        };
        if children == 0 {
            break;
        }
        let child = rng.below(children);
        node = match node {
            Value::Array(items) => &mut items[child],
            Value::Object(map) => map.values_mut().nth(child).expect("child exists"),
            _ => unreachable!(),
        };
    }
    node
}

/// `value` with one to three structure-aware mutations at random nodes:
/// values replaced by ones that break typed readers, numbers nudged,
/// array elements removed, duplicated, swapped or truncated, object keys
/// removed, added or renamed.
pub fn mutate_json(rng: &mut Rng, value: &mut Value) {
    for _ in 0..1 + rng.below(3) {
        let node = random_node(rng, value);
        mutate_node(rng, node);
    }
}

/// A large JSON seed with the pointers of all its nodes listed once, so a
/// node is drawn uniformly without walking the whole tree for each input.
pub struct JsonSeed {
    pub value: Value,
    pointers: Vec<String>,
}

fn collect_pointers(value: &Value, at: &mut String, out: &mut Vec<String>) {
    out.push(at.clone());
    let len = at.len();
    match value {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                at.push('/');
                at.push_str(&i.to_string());
                collect_pointers(item, at, out);
                at.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                at.push('/');
                at.push_str(&key.replace('~', "~0").replace('/', "~1"));
                collect_pointers(item, at, out);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

impl JsonSeed {
    pub fn new(value: Value) -> Self {
        let mut pointers = Vec::new();
        collect_pointers(&value, &mut String::new(), &mut pointers);
        Self { value, pointers }
    }

    /// A copy with one to three mutations, as [`mutate_json`] makes them
    /// (a node drawn uniformly half the time, else by a walk).
    pub fn mutated(&self, rng: &mut Rng) -> Value {
        let mut value = self.value.clone();
        for _ in 0..1 + rng.below(3) {
            if rng.one_in(2) {
                let pointer = rng.pick(&self.pointers).clone();
                // (An earlier mutation may have removed it.)
                if let Some(node) = value.pointer_mut(&pointer) {
                    mutate_node(rng, node);
                    continue;
                }
            }
            let node = walk(rng, &mut value);
            mutate_node(rng, node);
        }
        value
    }
}

/// One mutation of `node`.
fn mutate_node(rng: &mut Rng, node: &mut Value) {
    match node {
        Value::Number(n) if !rng.one_in(8) => {
            let v = n.as_u64().unwrap_or(0);
            // Most numbers in these inputs are bytes (of 32-byte
            // values): keep them bytes most of the time.
            *node = Value::from(if v <= 255 && !rng.one_in(4) {
                match rng.below(3) {
                    0 => v ^ (1 << rng.below(8)),
                    1 => rng.next_u64() & 0xff,
                    _ => *rng.pick(&[0, 1, 0x3f, 0x40, 0x73, 0x74, 0x7f, 0x80, 0xfe, 0xff]),
                }
            } else {
                match rng.below(5) {
                    0 => v.wrapping_add(1),
                    1 => v.wrapping_sub(1),
                    2 => v ^ (1 << rng.below(64)),
                    3 => v.wrapping_mul(1 << rng.below(40)),
                    _ => rng.interesting_u64(),
                }
            });
        }
        Value::Array(items) if !items.is_empty() && rng.below(3) != 0 => {
            let i = rng.below(items.len());
            match rng.below(6) {
                0 => {
                    items.remove(i);
                }
                1 => {
                    let copy = items[i].clone();
                    items.insert(rng.below(items.len() + 1), copy);
                }
                2 => {
                    let j = rng.below(items.len());
                    items.swap(i, j);
                }
                3 => items.truncate(i),
                4 => items.reverse(),
                _ => items[i] = interesting_json(rng),
            }
        }
        Value::Object(map) if !map.is_empty() && rng.below(3) != 0 => {
            let key = map.keys().nth(rng.below(map.len())).expect("key exists").clone();
            match rng.below(3) {
                0 => {
                    map.remove(&key);
                }
                1 => {
                    let v = map.remove(&key).expect("present");
                    map.insert(format!("{key}_"), v);
                }
                _ => {
                    map.insert(key, interesting_json(rng));
                }
            }
        }
        Value::String(s) if rng.one_in(2) => {
            let bytes = mutate_bytes(rng, s.as_bytes(), &[]);
            *s = String::from_utf8_lossy(&bytes).into_owned();
        }
        _ => *node = interesting_json(rng),
    }
}
