//! Recording a circuit made of independent units on all cores.
//!
//! [`CompiledR1cs::record`] runs the whole circuit through the recorder on
//! one core: minutes for the largest Filecoin circuits, paid before the
//! first proof of every circuit after each start. A circuit made of
//! independent units (a PoRep partition's challenges, a PoSt partition's
//! sectors: see [`CompiledR1cs::units`]) is recorded instead one unit
//! circuit at a time on the pool (each the same prologue, then that unit
//! alone), and the recordings are placed one after another: each unit's
//! variables, constraints and coefficient ids renumbered to where the whole
//! circuit has them. The result equals the sequential recording, field for
//! field (the tests compare them on the Filecoin circuits).
//!
//! Every unit recording is checked before it is used: it has exactly one
//! unit, nothing follows the unit (no allocation or constraint after its
//! namespace closes), and its prologue (variables, constraints,
//! coefficients, namespaces) is unit 0's. A unit that fails is an error,
//! and the caller records sequentially.
//!
//! Units are usually alike (the same gadgets over another challenge or
//! sector: a circuit's structure never depends on its values). Where they
//! far outnumber the pool's threads, one recording stands for all: every
//! unit circuit is run through a
//! constraint system that only counts (no linear combination built), a
//! sample of them (one per pool thread: unit 0, 1, the last and others
//! spread evenly) is recorded whole, and when every count and every
//! sampled recording equals unit 0's, unit 0's recording is placed at each
//! unit's offset. Otherwise every unit is recorded. A WindowPoSt partition's
//! 2,349 sectors then cost a counting pass and a few recordings instead of
//! 2,349 recordings.

use super::{CoefficientTable, CompiledR1cs, Entry, NamespaceStart, R1csError, SparseMatrix, INPUT_BIT};
use bellperson::{Circuit, ConstraintSystem, Index, Variable};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

/// One unit's recording and where its unit starts in it.
struct UnitRecording {
    r1cs: CompiledR1cs,
    /// Inputs, aux variables and constraints of the prologue.
    prologue: (usize, usize, usize),
    /// The constraints the circuit enforced (the per-input ones excluded).
    rows: usize,
    /// Index of the unit's namespace in `r1cs.namespaces` (those before it
    /// are the prologue's).
    namespace: usize,
}

impl UnitRecording {
    fn new<C: Circuit<Scalar>>(prefix: &str, unit: usize, circuit: C) -> Result<Self, R1csError> {
        let mismatch = |what: String| R1csError::UnitMismatch(format!("unit {unit}: {what}"));
        let (r1cs, spans) = CompiledR1cs::record_spanned(circuit)?;
        if r1cs.units(prefix).map(|layout| layout.len()) != Some(1) {
            return Err(mismatch(format!(
                "its circuit does not hold exactly one {prefix}* namespace"
            )));
        }
        let namespace = r1cs
            .namespaces
            .iter()
            .position(|ns| ns.path.starts_with(prefix))
            .ok_or_else(|| mismatch(format!("no {prefix}* namespace")))?;
        let rows = r1cs.num_constraints() - r1cs.num_inputs;
        let (start, span) = (&r1cs.namespaces[namespace], spans[namespace]);
        if span.end != Some((r1cs.num_inputs, r1cs.num_aux, rows)) {
            return Err(mismatch("the circuit goes on after its unit".into()));
        }
        let prologue = (start.inputs, start.aux, span.rows);
        Ok(Self {
            prologue,
            rows,
            namespace,
            r1cs,
        })
    }

    /// The unit's own (inputs, aux variables, constraints).
    fn own(&self) -> (usize, usize, usize) {
        (
            self.r1cs.num_inputs - self.prologue.0,
            self.r1cs.num_aux - self.prologue.1,
            self.rows - self.prologue.2,
        )
    }

    /// Whether it records the same unit as `other` (its namespaces' names
    /// aside, which may number the unit).
    fn alike(&self, other: &UnitRecording) -> bool {
        let (mine, theirs) = (&self.r1cs, &other.r1cs);
        let places = |r: &CompiledR1cs| -> Vec<(usize, usize, usize)> {
            r.namespaces
                .iter()
                .map(|ns| (ns.depth, ns.inputs, ns.aux))
                .collect()
        };
        (self.prologue, self.rows, self.namespace) == (other.prologue, other.rows, other.namespace)
            && (mine.num_inputs, mine.num_aux) == (theirs.num_inputs, theirs.num_aux)
            && mine.a == theirs.a
            && mine.b == theirs.b
            && mine.c == theirs.c
            && mine.coefficients == theirs.coefficients
            && places(mine) == places(theirs)
            && mine.namespaces[..self.namespace] == theirs.namespaces[..other.namespace]
    }

    /// Whether its prologue is `first`'s: counts, constraints, the
    /// coefficients they use and the namespaces.
    fn same_prologue(&self, first: &UnitRecording) -> bool {
        if self.prologue != first.prologue || self.namespace != first.namespace {
            return false;
        }
        let rows = self.prologue.2;
        let pairs = [
            (&self.r1cs.a, &first.r1cs.a),
            (&self.r1cs.b, &first.r1cs.b),
            (&self.r1cs.c, &first.r1cs.c),
        ];
        let mut used = 2;
        for (mine, theirs) in pairs {
            let nonzeros = theirs.row_starts[rows] as usize;
            if mine.row_starts[..=rows] != theirs.row_starts[..=rows]
                || mine.entries[..nonzeros] != theirs.entries[..nonzeros]
            {
                return false;
            }
            let top = mine.entries[..nonzeros]
                .iter()
                .map(|e| e.coefficient as usize + 1)
                .max();
            used = used.max(top.unwrap_or(0));
        }
        self.r1cs.coefficients.get(..used) == first.r1cs.coefficients.get(..used)
            && self.r1cs.namespaces[..self.namespace] == first.r1cs.namespaces[..first.namespace]
    }
}

/// Where unit `i` goes in the whole circuit, and how its ids map.
struct Placement {
    /// First input, aux variable and constraint of the unit.
    offsets: (usize, usize, usize),
    /// Its coefficient ids to the whole circuit's.
    coefficients: Vec<u32>,
}

impl Placement {
    /// Unit entry `entry` renumbered for the whole circuit (`prologue`:
    /// the prologue's inputs and aux variables, which keep their numbers).
    fn entry(&self, entry: Entry, prologue: (usize, usize)) -> Option<Entry> {
        let index = (entry.variable & !INPUT_BIT) as usize;
        let (kept, offset, tag) = match entry.variable & INPUT_BIT {
            0 => (prologue.1, self.offsets.1, 0),
            _ => (prologue.0, self.offsets.0, INPUT_BIT),
        };
        let placed = if index < kept {
            index
        } else {
            offset + index - kept
        };
        let placed = u32::try_from(placed).ok().filter(|&i| i < INPUT_BIT)?;
        Some(Entry {
            variable: placed | tag,
            coefficient: *self.coefficients.get(entry.coefficient as usize)?,
        })
    }
}

impl CompiledR1cs {
    /// Records a circuit of `units` independent units (namespaces whose
    /// paths start with `prefix`, as for [`units`](Self::units)) on all
    /// cores: `unit_circuit(i)` must be the circuit with unit `i` alone
    /// (the same prologue, then only that unit), as for
    /// [`witness_by_units`](Self::witness_by_units). Equal to
    /// [`record`](Self::record) of the whole circuit; a unit circuit that
    /// is not its unit alone behind the common prologue is an error (see
    /// the module documentation).
    ///
    /// Peak memory: the whole circuit's R1CS and one unit's recording
    /// when the units are alike, else the unit recordings together (about
    /// the whole circuit's R1CS again) and one merged matrix beside them.
    pub fn record_by_units<C, F>(prefix: &str, units: usize, unit_circuit: F) -> Result<Self, R1csError>
    where
        C: Circuit<Scalar>,
        F: Fn(usize) -> Result<C, R1csError> + Sync,
    {
        if units == 0 {
            return Err(R1csError::UnitMismatch("no units".into()));
        }
        let record = |indices: Vec<usize>| -> Result<Vec<UnitRecording>, R1csError> {
            crate::cores::share_with_pool(indices, |i| UnitRecording::new(prefix, i, unit_circuit(i)?))
                .into_iter()
                .collect()
        };
        // Units alike (every unit's counts equal, and a sample's whole
        // recordings equal): one recording stands for all. Otherwise each
        // unit is recorded.
        // Only worth it when the sample is far smaller than the units: the
        // counting pass costs a good part of a recording (a 32 GiB PoRep
        // partition's 18 challenges on 16 cores record faster all at once).
        let sample = sample_of(units, rayon::current_num_threads());
        let sample = if 2 * sample.len() < units {
            sample
        } else {
            (0..units).collect()
        };
        let sampled = record(sample)?;
        let alike = sampled.len() < units
            && sampled.iter().all(|r| r.alike(&sampled[0]))
            && counts_alike(units, &unit_circuit)?;
        let (mut recordings, sources) = if alike {
            let first = sampled.into_iter().next().expect("unit 0 is sampled");
            (vec![first], vec![0; units])
        } else if sampled.len() == units {
            (sampled, (0..units).collect())
        } else {
            drop(sampled);
            (record((0..units).collect())?, (0..units).collect::<Vec<usize>>())
        };
        let first = &recordings[0];
        if let Some(i) = recordings.iter().position(|r| !r.same_prologue(first)) {
            return Err(R1csError::UnitMismatch(format!(
                "unit {i}'s prologue is not unit 0's"
            )));
        }
        let prologue = first.prologue;
        let too_large = |what: &str| R1csError::TooLarge(format!("{what} of {units} units"));

        // Where each unit goes, and one coefficient table for all (unit 0's
        // first, in its order, so the prologue's ids stay as they are).
        let mut table = CoefficientTable::new();
        let mut placements = Vec::with_capacity(units);
        let mut next = prologue;
        for recording in sources.iter().map(|&k| &recordings[k]) {
            let coefficients = recording
                .r1cs
                .coefficients
                .iter()
                .map(|value| table.id(value))
                .collect::<Option<Vec<u32>>>()
                .ok_or_else(|| too_large("the coefficients"))?;
            placements.push(Placement {
                offsets: next,
                coefficients,
            });
            let own = recording.own();
            next = (next.0 + own.0, next.1 + own.1, next.2 + own.2);
        }
        let (num_inputs, num_aux, own_rows) = next;
        if num_inputs.max(num_aux) >= INPUT_BIT as usize {
            return Err(too_large("the variables"));
        }

        let mut merged = [
            SparseMatrix::default(),
            SparseMatrix::default(),
            SparseMatrix::default(),
        ];
        for (m, out) in merged.iter_mut().enumerate() {
            let parts: Vec<SparseMatrix> = recordings
                .iter_mut()
                .map(|r| std::mem::take([&mut r.r1cs.a, &mut r.r1cs.b, &mut r.r1cs.c][m]))
                .collect();
            // The per-input constraints: the input alone in A, nothing in B, C.
            let independence = m == 0;
            *out = merge_matrix(
                &parts,
                &recordings,
                &sources,
                &placements,
                prologue,
                own_rows,
                num_inputs,
                independence,
            )
            .ok_or_else(|| too_large("a matrix"))?;
        }
        let [a, b, c] = merged;

        let mut namespaces: Vec<NamespaceStart> =
            recordings[0].r1cs.namespaces[..recordings[0].namespace].to_vec();
        for (i, (recording, placement)) in sources
            .iter()
            .map(|&k| &recordings[k])
            .zip(&placements)
            .enumerate()
        {
            let unit_path = &recording.r1cs.namespaces[recording.namespace].path;
            // storage-proofs numbers its units: the unit circuit's lone unit
            // is `<prefix>0`, the whole circuit's unit i `<prefix><i>`.
            let numbered = unit_path[prefix.len()..].bytes().all(|b| b.is_ascii_digit());
            for ns in &recording.r1cs.namespaces[recording.namespace..] {
                let path = match ns.path.strip_prefix(unit_path.as_str()) {
                    Some(rest) if numbered => format!("{prefix}{i}{rest}"),
                    _ => ns.path.clone(),
                };
                namespaces.push(NamespaceStart {
                    path,
                    depth: ns.depth,
                    inputs: placement.offsets.0 + ns.inputs - prologue.0,
                    aux: placement.offsets.1 + ns.aux - prologue.1,
                });
            }
        }
        Ok(Self::from_matrices(
            [a, b, c],
            table.values,
            (num_inputs, num_aux),
            namespaces,
        ))
    }
}

/// One matrix of the whole circuit from its units' (unit `i`'s is
/// `parts[sources[i]]`, of `recordings[sources[i]]`): the prologue's rows
/// (unit 0's), each unit's own rows renumbered by its placement, then one
/// row per input (`independence`: the input alone, else empty). `None`
/// when a number outgrows its field.
#[allow(clippy::too_many_arguments)]
fn merge_matrix(
    parts: &[SparseMatrix],
    recordings: &[UnitRecording],
    sources: &[usize],
    placements: &[Placement],
    prologue: (usize, usize, usize),
    own_rows: usize,
    num_inputs: usize,
    independence: bool,
) -> Option<SparseMatrix> {
    let rows = own_rows + num_inputs;
    let prologue_nonzeros = parts[0].row_starts[prologue.2] as usize;
    // Each unit's own rows and nonzeros in its recording.
    let spans: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> = sources
        .iter()
        .map(|&k| (&parts[k], &recordings[k]))
        .map(|(part, recording)| {
            let rows = prologue.2..recording.rows;
            let nonzeros = part.row_starts[rows.start] as usize..part.row_starts[rows.end] as usize;
            (rows, nonzeros)
        })
        .collect();
    let own_nonzeros = prologue_nonzeros + spans.iter().map(|(_, n)| n.len()).sum::<usize>();
    let nonzeros = own_nonzeros + if independence { num_inputs } else { 0 };
    u32::try_from(nonzeros).ok()?;

    let mut row_starts = vec![0u32; rows + 1];
    let mut entries = vec![
        Entry {
            variable: 0,
            coefficient: 0
        };
        nonzeros
    ];
    row_starts[..=prologue.2].copy_from_slice(&parts[0].row_starts[..=prologue.2]);
    entries[..prologue_nonzeros].copy_from_slice(&parts[0].entries[..prologue_nonzeros]);

    // Disjoint slices of the output, one per unit, filled in parallel.
    let (_, mut starts_rest) = row_starts.split_at_mut(prologue.2);
    let (_, mut entries_rest) = entries.split_at_mut(prologue_nonzeros);
    let mut targets = Vec::with_capacity(sources.len());
    let mut first_nonzero = prologue_nonzeros;
    for (i, (rows, nonzeros)) in spans.iter().enumerate() {
        let (starts, rest) = std::mem::take(&mut starts_rest).split_at_mut(rows.len());
        let (unit_entries, rest_entries) = std::mem::take(&mut entries_rest).split_at_mut(nonzeros.len());
        starts_rest = rest;
        entries_rest = rest_entries;
        targets.push((i, first_nonzero, starts, unit_entries));
        first_nonzero += nonzeros.len();
    }
    let placed = targets
        .into_par_iter()
        .all(|(i, first_nonzero, starts, unit_entries)| {
            let (part, (rows, nonzeros)) = (&parts[sources[i]], &spans[i]);
            for (out, &start) in starts.iter_mut().zip(&part.row_starts[rows.clone()]) {
                // Fits: the total was checked against u32 above.
                *out = (first_nonzero + start as usize - nonzeros.start) as u32;
            }
            let kept = (prologue.0, prologue.1);
            unit_entries
                .iter_mut()
                .zip(&part.entries[nonzeros.clone()])
                .all(|(out, &entry)| placements[i].entry(entry, kept).map(|e| *out = e).is_some())
        });
    if !placed {
        return None;
    }
    for input in 0..num_inputs {
        let start = own_nonzeros + if independence { input } else { 0 };
        row_starts[own_rows + input] = start as u32;
        if independence {
            entries[start] = Entry {
                variable: input as u32 | INPUT_BIT,
                coefficient: super::ONE_ID,
            };
        }
    }
    row_starts[rows] = nonzeros as u32;
    Some(SparseMatrix {
        row_starts: row_starts.into(),
        entries: entries.into(),
    })
}

/// The units whose whole recordings are compared: 0, 1, the last, and
/// others spread evenly, `width` in all (one per pool thread: recorded
/// side by side, they cost about one unit's time).
pub(super) fn sample_of(units: usize, width: usize) -> Vec<usize> {
    let width = width.max(3).min(units);
    let mut sample: Vec<usize> = (0..width).map(|k| k * (units - 1) / (width - 1).max(1)).collect();
    sample.extend([0, 1.min(units - 1), units - 1]);
    sample.sort_unstable();
    sample.dedup();
    sample
}

/// Whether every unit circuit allocates as many inputs and aux variables
/// and enforces as many constraints as unit 0's: each run through a
/// constraint system that only counts (no linear combination built, no
/// value computed), on the pool.
fn counts_alike<C, F>(units: usize, unit_circuit: &F) -> Result<bool, R1csError>
where
    C: Circuit<Scalar>,
    F: Fn(usize) -> Result<C, R1csError> + Sync,
{
    let counts: Vec<(usize, usize, usize)> = crate::cores::share_with_pool((0..units).collect(), |i| {
        let mut cs = Counter::default();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        unit_circuit(i)?.synthesize(&mut cs)?;
        Ok::<_, R1csError>((cs.inputs, cs.aux, cs.constraints))
    })
    .into_iter()
    .collect::<Result<_, _>>()?;
    Ok(counts.iter().all(|c| *c == counts[0]))
}

/// A constraint system that counts and does nothing else.
#[derive(Debug, Default)]
struct Counter {
    inputs: usize,
    aux: usize,
    constraints: usize,
}

impl ConstraintSystem<Scalar> for Counter {
    type Root = Self;

    crate::allocate!(this, _;
        aux => {
            this.aux += 1;
            Ok(Variable(Index::Aux(this.aux - 1)))
        }
        input => {
            this.inputs += 1;
            Ok(Variable(Index::Input(this.inputs - 1)))
        }
    );

    crate::enforce_without_combinations!(this => this.constraints += 1);

    crate::flat_namespaces!();
}
