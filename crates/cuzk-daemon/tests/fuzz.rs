//! Fuzz test (issue 34, item 6) of the Unix socket's header path: the
//! bytes a local client sends go through `authority_fix::AuthorityFix` (HTTP/2 frames
//! collected, every header block HPACK-decoded and re-encoded) before h2,
//! and before the token is checked. Mutated client streams must be refused
//! with an error or passed on, never panic, and what is passed on must be
//! frames whose header blocks decode, with an `:authority` h2 accepts.
//!
//! Seeds: what grpc-core sends for two calls on one connection (dynamic
//! table references, padding, priority, a CONTINUATION) and the requests of
//! RFC 7541 appendix C (with and without Huffman coding). Mutations hit the
//! header blocks (bytes, and HPACK integers: the size update whose cut-off
//! integer panicked fluke-hpack) or the framed stream, which is then fed in
//! random pieces. The mutator and harness are cuzk-core's `tests/fuzzing`.

#[path = "../../cuzk-core/tests/fuzzing/mod.rs"]
mod fuzzing;

use cuzk_daemon::authority_fix::AuthorityFix;
use fuzzing::{mutate_bytes, Rng, Verdict};
use tonic::codegen::http::uri::Authority;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;

fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

fn literal(first: u8, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
    out.push(first);
    for text in [name, value] {
        assert!(text.len() < 127);
        out.push(text.len() as u8);
        out.extend_from_slice(text);
    }
}

/// Connections' header blocks, in order (later ones may refer to the
/// dynamic table entries of earlier ones).
fn seeds() -> Vec<Vec<Vec<u8>>> {
    // grpc-core: :path, :authority (percent-encoded socket path),
    // content-type and te indexed, then a repeat by reference.
    let mut first = vec![0x83, 0x86, 0x44, 32];
    first.extend_from_slice(b"/cuzk.v1.ProvingEngine/GetStatus");
    first.extend_from_slice(&[0x41, 15]);
    first.extend_from_slice(b"tmp%2Fcuzk.sock");
    first.extend_from_slice(&[0x40 | 31, 16]);
    first.extend_from_slice(b"application/grpc");
    literal(0x40, b"te", b"trailers", &mut first);
    literal(0x10, b"authorization", b"Bearer 0123456789abcdef", &mut first);
    let repeat = vec![0x83, 0x86, 0x80 | 65, 0x80 | 64, 0x80 | 63, 0x80 | 62];
    vec![
        vec![first, repeat],
        // RFC 7541 C.3: requests without Huffman coding.
        vec![
            hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"),
            hex("8286 84be 5808 6e6f 2d63 6163 6865"),
            hex("8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"),
        ],
        // RFC 7541 C.4: the same with Huffman coding, after a size update.
        vec![
            hex("3fe1 1f82 8684 418c f1e3 c2e5 f23a 6ba0 ab90 f4ff"),
            hex("8286 84be 5886 a8eb 1064 9cbf"),
            hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"),
        ],
    ]
}

/// One frame.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// A header block as HEADERS (maybe padded, with a priority) and
/// CONTINUATION frames, with a DATA frame after it.
fn framed(rng: &mut Rng, block: &[u8], stream: u32, out: &mut Vec<u8>) {
    let (padded, priority) = (rng.one_in(3), rng.one_in(3));
    let split = if block.is_empty() || rng.one_in(2) {
        block.len()
    } else {
        rng.below(block.len() + 1)
    };
    let mut payload = Vec::new();
    let mut flags = 0;
    let pad = rng.below(8);
    if padded {
        flags |= PADDED;
        payload.push(pad as u8);
    }
    if priority {
        flags |= PRIORITY;
        payload.extend_from_slice(&[0, 0, 0, 0, 15]);
    }
    payload.extend_from_slice(&block[..split]);
    if padded {
        payload.extend(std::iter::repeat_n(0, pad));
    }
    if split == block.len() {
        flags |= END_HEADERS;
    }
    frame(HEADERS, flags, stream, &payload, out);
    if split < block.len() {
        frame(CONTINUATION, END_HEADERS, stream, &block[split..], out);
    }
    frame(0x0, END_STREAM, stream, &[0, 0, 0, 0, 0], out);
}

/// An HPACK integer with a `prefix`-bit prefix whose octets are cut off or
/// run long: what fluke-hpack unwrapped in a size update.
fn hostile_integer(rng: &mut Rng) -> Vec<u8> {
    let prefix = *rng.pick(&[0x20u8, 0x3f, 0x7f, 0xff, 0x1f, 0x0f]);
    let mut out = vec![prefix | 0x1f];
    for _ in 0..rng.below(7) {
        out.push(0x80 | rng.next_u64() as u8);
    }
    if rng.one_in(2) {
        out.push(rng.next_u64() as u8 & 0x7f);
    }
    out
}

/// A client's byte stream, and the sizes of the pieces it arrives in.
#[derive(Debug)]
struct Input {
    bytes: Vec<u8>,
    pieces: Vec<usize>,
}

fn mutated_stream(rng: &mut Rng) -> Input {
    let seeds = seeds();
    let connection = rng.pick(&seeds).clone();
    let all: Vec<&[u8]> = seeds.iter().flatten().map(|b| &b[..]).collect();
    let mut blocks = connection;
    let target = rng.below(blocks.len());
    let block = &mut blocks[target];
    match rng.below(4) {
        0 => {
            let hostile = hostile_integer(rng);
            let at = if rng.one_in(2) {
                block.len()
            } else {
                rng.below(block.len() + 1)
            };
            block.splice(at..at, hostile);
        }
        1 => block.truncate(rng.below(block.len() + 1)),
        _ => *block = mutate_bytes(rng, block, &all),
    }
    let mut bytes = PREFACE.to_vec();
    frame(0x4, 0, 0, &[], &mut bytes); // SETTINGS
    for (i, block) in blocks.iter().enumerate() {
        framed(rng, block, 1 + 2 * i as u32, &mut bytes);
    }
    if rng.one_in(8) {
        // The frames themselves (lengths, kinds, flags, streams) mutated.
        let tail = mutate_bytes(rng, &bytes[PREFACE.len()..], &[]);
        bytes.truncate(PREFACE.len());
        bytes.extend(tail);
    }
    let mut pieces = Vec::new();
    let mut left = bytes.len();
    while left > 0 {
        let n = match rng.below(3) {
            0 => left,
            1 => 1 + rng.below(16.min(left)),
            _ => 1 + rng.below(left),
        };
        pieces.push(n);
        left -= n;
    }
    Input { bytes, pieces }
}

/// The header blocks of the frames `AuthorityFix` emitted; `Err` says what
/// is wrong with them.
fn emitted_blocks(mut bytes: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    bytes = bytes
        .strip_prefix(PREFACE)
        .ok_or("the preface was not passed on")?;
    let mut blocks = Vec::new();
    let mut open: Option<Vec<u8>> = None;
    while !bytes.is_empty() {
        if bytes.len() < 9 {
            // A frame the client has not finished sending passes on as it comes.
            return Ok(blocks);
        }
        let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
        let (kind, flags) = (bytes[3], bytes[4]);
        let payload = &bytes[9..bytes.len().min(9 + len)];
        let header = kind == HEADERS || (kind == CONTINUATION && open.is_some());
        if header && payload.len() < len {
            return Err("a header frame was passed on cut off".into());
        }
        match kind {
            HEADERS => {
                if open.is_some() {
                    return Err("a HEADERS frame inside an open block".into());
                }
                let skip = if flags & PRIORITY != 0 { 5 } else { 0 };
                if flags & PADDED != 0 {
                    return Err("an emitted HEADERS frame is padded".into());
                }
                open = Some(payload[skip..].to_vec());
            }
            CONTINUATION if open.is_some() => open.as_mut().unwrap().extend_from_slice(payload),
            _ if open.is_some() => return Err("a block interrupted by another frame".into()),
            _ => {}
        }
        if header && flags & END_HEADERS != 0 {
            blocks.push(open.take().unwrap());
        }
        bytes = &bytes[9 + payload.len()..];
    }
    Ok(blocks)
}

#[test]
fn fuzz_unix_socket_header_blocks() {
    fuzzing::run("uds_header_blocks", 100_000, mutated_stream, |input| {
        let mut fix = AuthorityFix::default();
        let mut out = Vec::new();
        let mut at = 0;
        for &n in &input.pieces {
            if fix.push(&input.bytes[at..at + n], &mut out).is_err() {
                return Verdict::Refused;
            }
            at += n;
        }
        let blocks = match emitted_blocks(&out) {
            Ok(blocks) => blocks,
            Err(what) => return Verdict::Finding(what),
        };
        // The rewriter emits literals that never enter the dynamic table,
        // so each block decodes on its own.
        for block in blocks {
            let mut decoder = fluke_hpack::Decoder::new();
            let headers = match decoder.decode(&block) {
                Ok(headers) => headers,
                Err(e) => return Verdict::Finding(format!("an emitted block does not decode: {e:?}")),
            };
            for (name, value) in headers {
                if name == b":authority" && Authority::try_from(&value[..]).is_err() {
                    return Verdict::Finding(format!("an invalid :authority was passed on: {value:02x?}"));
                }
            }
        }
        Verdict::Accepted
    });
}
