//! `cuzk-ctl timeline`: a daemon's (or embedded engine's) TIMELINE log
//! lines drawn as an SVG chart: one row per worker with its synthesis,
//! preparation, CUDA-region and finish spans, a row for the GPU itself (the
//! CUDA regions of all its workers), and idle gaps left blank. Also prints
//! each row's busy fraction.

use anyhow::{bail, Context};
use clap::Args;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct TimelineArgs {
    /// Log file with TIMELINE lines (ANSI colours are ignored).
    #[arg(long)]
    log: PathBuf,
    /// Where to write the SVG.
    #[arg(long)]
    out: PathBuf,
    /// Chart width in pixels.
    #[arg(long, default_value_t = 1400)]
    width: u32,
}

/// One TIMELINE event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub t_ms: u64,
    pub event: String,
    pub job: String,
    pub partition: u64,
    pub worker: String,
    /// `gpu_ms=` of `prover_gpu_end` (the CUDA region), if any.
    pub gpu_ms: Option<u64>,
}

/// Parses the TIMELINE events of a log, skipping every other line.
pub fn parse(log: &str) -> Vec<Event> {
    log.lines()
        .filter_map(|line| {
            let start = line.find("TIMELINE ")?;
            let mut fields = BTreeMap::new();
            for token in line[start + 9..].split_whitespace() {
                let token = strip_ansi(token);
                if let Some((k, v)) = token.split_once('=') {
                    fields.insert(k.to_string(), v.to_string());
                }
            }
            Some(Event {
                t_ms: fields.get("t_ms")?.parse().ok()?,
                event: fields.get("event")?.clone(),
                job: fields.get("job")?.clone(),
                partition: fields.get("partition")?.parse().ok()?,
                worker: fields.get("worker")?.clone(),
                gpu_ms: fields.get("gpu_ms").and_then(|v| v.parse().ok()),
            })
        })
        .collect()
}

fn strip_ansi(token: &str) -> String {
    let mut out = String::new();
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A coloured interval on a row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub start: u64,
    pub end: u64,
    pub kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Synthesis,
    Prepare,
    Gpu,
    Finish,
}

impl Kind {
    fn colour(self) -> &'static str {
        match self {
            Kind::Synthesis => "#4e79a7",
            Kind::Prepare => "#f28e2b",
            Kind::Gpu => "#59a14f",
            Kind::Finish => "#b07aa1",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Synthesis => "synthesis",
            Kind::Prepare => "prove_start on the CPU (prepare, or the whole CPU prover)",
            Kind::Gpu => "CUDA region",
            Kind::Finish => "finish (epilogue)",
        }
    }
}

/// Rows of spans, by row name, from the events: `synth-*` rows, one row per
/// prover worker, a `finish` row per prover worker, and `GPU` (every
/// worker's CUDA regions).
pub fn rows(events: &[Event]) -> BTreeMap<String, Vec<Span>> {
    let mut open: BTreeMap<(String, u64, &str), u64> = BTreeMap::new();
    let mut rows: BTreeMap<String, Vec<Span>> = BTreeMap::new();
    for e in events {
        let key = |stage: &'static str| (e.job.clone(), e.partition, stage);
        match e.event.as_str() {
            "synthesis_start" => {
                open.insert(key("synth"), e.t_ms);
            }
            "synthesis_end" => {
                if let Some(start) = open.remove(&key("synth")) {
                    rows.entry(e.worker.clone()).or_default().push(Span {
                        start,
                        end: e.t_ms,
                        kind: Kind::Synthesis,
                    });
                }
            }
            "prover_start" => {
                open.insert(key("prove"), e.t_ms);
            }
            "prover_gpu_end" => {
                if let Some(start) = open.remove(&key("prove")) {
                    let row = rows.entry(e.worker.clone()).or_default();
                    let gpu_start = e.gpu_ms.map(|g| e.t_ms.saturating_sub(g).max(start));
                    row.push(Span {
                        start,
                        end: gpu_start.unwrap_or(e.t_ms),
                        kind: Kind::Prepare,
                    });
                    if let Some(gpu_start) = gpu_start {
                        let span = Span {
                            start: gpu_start,
                            end: e.t_ms,
                            kind: Kind::Gpu,
                        };
                        row.push(span);
                        rows.entry("GPU".into()).or_default().push(span);
                    }
                }
                open.insert(key("finish"), e.t_ms);
            }
            "prover_end" => {
                if let Some(start) = open.remove(&key("finish")) {
                    rows.entry(format!("{} finish", e.worker))
                        .or_default()
                        .push(Span {
                            start,
                            end: e.t_ms,
                            kind: Kind::Finish,
                        });
                }
            }
            _ => {}
        }
    }
    rows
}

/// Milliseconds covered by the union of `spans`.
pub fn busy_ms(spans: &[Span]) -> u64 {
    let mut intervals: Vec<(u64, u64)> = spans.iter().map(|s| (s.start, s.end)).collect();
    intervals.sort();
    let (mut total, mut current): (u64, Option<(u64, u64)>) = (0, None);
    for (s, e) in intervals {
        match current {
            Some((cs, ce)) if s <= ce => current = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                current = Some((s, e));
            }
            None => current = Some((s, e)),
        }
    }
    total + current.map_or(0, |(s, e)| e - s)
}

/// The chart.
pub fn svg(rows: &BTreeMap<String, Vec<Span>>, width: u32) -> String {
    let t0 = rows.values().flatten().map(|s| s.start).min().unwrap_or(0);
    let t1 = rows
        .values()
        .flatten()
        .map(|s| s.end)
        .max()
        .unwrap_or(1)
        .max(t0 + 1);
    let (label_w, row_h, top) = (170.0, 22.0, 30.0);
    let plot_w = width as f64 - label_w - 20.0;
    let x = |t: u64| label_w + (t - t0) as f64 / (t1 - t0) as f64 * plot_w;
    let height = top + row_h * rows.len() as f64 + 80.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{label_w}" y="18">TIMELINE, {:.1} s; each row one worker (blank = idle)</text>"#,
        (t1 - t0) as f64 / 1e3
    );
    for (i, (name, spans)) in rows.iter().enumerate() {
        let y = top + row_h * i as f64;
        let busy = busy_ms(spans) as f64 / (t1 - t0) as f64 * 100.0;
        let _ = writeln!(
            out,
            r#"<text x="4" y="{:.1}">{} ({busy:.0}%)</text>"#,
            y + 15.0,
            escape(name)
        );
        let _ = writeln!(
            out,
            r##"<rect x="{label_w}" y="{y:.1}" width="{plot_w:.1}" height="{:.1}" fill="#f4f4f4"/>"##,
            row_h - 4.0
        );
        for s in spans {
            let _ = writeln!(
                out,
                r#"<rect x="{:.2}" y="{y:.1}" width="{:.2}" height="{:.1}" fill="{}"><title>{} {} ms</title></rect>"#,
                x(s.start),
                (x(s.end) - x(s.start)).max(0.5),
                row_h - 4.0,
                s.kind.colour(),
                s.kind.name(),
                s.end - s.start
            );
        }
    }
    let legend_y = top + row_h * rows.len() as f64 + 20.0;
    for (i, kind) in [Kind::Synthesis, Kind::Prepare, Kind::Gpu, Kind::Finish]
        .into_iter()
        .enumerate()
    {
        let lx = label_w + 300.0 * (i % 2) as f64;
        let ly = legend_y + 20.0 * (i / 2) as f64;
        let _ = writeln!(
            out,
            r#"<rect x="{lx}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{}" y="{:.1}">{}</text>"#,
            ly - 10.0,
            kind.colour(),
            lx + 16.0,
            ly,
            kind.name()
        );
    }
    out.push_str("</svg>\n");
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

pub fn run(args: TimelineArgs) -> anyhow::Result<()> {
    let log =
        std::fs::read_to_string(&args.log).with_context(|| format!("reading {}", args.log.display()))?;
    let events = parse(&log);
    if events.is_empty() {
        bail!(
            "no TIMELINE lines in {} (run the daemon with logging at info)",
            args.log.display()
        );
    }
    let rows = rows(&events);
    std::fs::write(&args.out, svg(&rows, args.width))
        .with_context(|| format!("writing {}", args.out.display()))?;
    let t0 = rows.values().flatten().map(|s| s.start).min().unwrap_or(0);
    let t1 = rows.values().flatten().map(|s| s.end).max().unwrap_or(0);
    println!(
        "{} events, {:.1} s, {} rows -> {}",
        events.len(),
        (t1 - t0) as f64 / 1e3,
        rows.len(),
        args.out.display()
    );
    for (name, spans) in &rows {
        println!(
            "  {name:<22} busy {:5.1}%",
            busy_ms(spans) as f64 / (t1 - t0).max(1) as f64 * 100.0
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
x \u{1b}[2mINFO\u{1b}[0m TIMELINE t_ms=1000 event=synthesis_start job=j partition=0 worker=synth-0
TIMELINE t_ms=1400 event=synthesis_end job=j partition=0 worker=synth-0
unrelated line
TIMELINE t_ms=1400 event=prover_start job=j partition=0 worker=prover-0.0
TIMELINE t_ms=1700 event=prover_gpu_end job=j partition=0 worker=prover-0.0 lock_wait_ms=0 gpu_ms=200
TIMELINE t_ms=1750 event=prover_end job=j partition=0 worker=prover-0.0
TIMELINE t_ms=1500 event=prover_start job=j partition=1 worker=prover-0.1
TIMELINE t_ms=1900 event=prover_gpu_end job=j partition=1 worker=prover-0.1 gpu_ms=150";

    #[test]
    fn spans_and_busy_time_follow_the_events() {
        let events = parse(LOG);
        assert_eq!(events.len(), 7);
        assert_eq!(events[0].worker, "synth-0");
        let rows = rows(&events);
        assert_eq!(
            rows["synth-0"],
            vec![Span {
                start: 1000,
                end: 1400,
                kind: Kind::Synthesis
            }]
        );
        assert_eq!(
            rows["prover-0.0"],
            vec![
                Span {
                    start: 1400,
                    end: 1500,
                    kind: Kind::Prepare
                },
                Span {
                    start: 1500,
                    end: 1700,
                    kind: Kind::Gpu
                }
            ]
        );
        assert_eq!(
            rows["prover-0.0 finish"],
            vec![Span {
                start: 1700,
                end: 1750,
                kind: Kind::Finish
            }]
        );
        // GPU row: [1500,1700] and [1750,1900]: 350 ms, the gap left idle.
        assert_eq!(busy_ms(&rows["GPU"]), 350);
        let chart = svg(&rows, 800);
        assert!(chart.starts_with("<svg") && chart.trim_end().ends_with("</svg>"));
        assert_eq!(chart.matches("<title>CUDA region").count(), 4); // two workers' rows + GPU row
    }

    #[test]
    fn overlapping_spans_are_counted_once() {
        let s = |start, end| Span {
            start,
            end,
            kind: Kind::Gpu,
        };
        assert_eq!(busy_ms(&[s(0, 10), s(5, 20), s(30, 40)]), 30);
        assert_eq!(busy_ms(&[]), 0);
    }
}
