//! The writer part: `rclev_bag::BagWriter` against the `mcap` crate writing the same messages
//! with the same options directly.
//!
//! Both sides write one topic of `std_msgs/msg/ByteMultiArray` messages (the same bytes, from
//! one pool made before the clock starts) to a new file in the temporary directory, from
//! creating the file to closing it (`finish`), in this process: up to 256 MiB or 2 000 000
//! messages, whichever is less, or until `--secs` passed. The baseline is what `BagWriter`
//! itself drives: `mcap::WriteOptions` with profile `ros2`, rosbag2's 768 KiB chunks, the same
//! compression and no chunk or data-section CRCs, one schema and one channel (with the same
//! metadata), each message by `write_to_known_channel` into a `BufWriter<File>`. What rclev
//! adds is its bag bookkeeping (split checks, per-file and per-topic counts, the byte-counting
//! stream, `metadata.yaml`).
//!
//! CPU is the process's (`getrusage`): zstd may compress on threads of its own. On a disk,
//! the page cache's writeback throttles whichever side happens to write when it starts (runs
//! were seen at a tenth of their usual speed, on either side): `TMPDIR=/dev/shm` takes the
//! disk out of the figures.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use rclev_bag::{BagTopic, BagWriter, Compression, WriterOptions};
use serde::Serialize;

use super::roles::{message, qos, type_info, DATA_OFFSET};
use super::{dir_bytes, median_of, order, ratio_cell, ratio_range, Options, Scratch};
use crate::bench_dds::size_label;
use crate::errors::Result;
use crate::report::process_cpu_secs;

/// The most a run writes, in message bytes.
const MAX_BYTES: u64 = 256 << 20;
/// The most messages a run writes: at 16 B, 2 million take ~0.3 s, long beside the machine's
/// stalls (3–30 ms); 200 000 took ~35 ms, and the ratios swung by ±30% from one run to the
/// next.
const MAX_MESSAGES: u64 = 2_000_000;
/// About how many bytes of distinct messages are made ahead: more than a chunk, so that zstd
/// never sees a chunk of repeats.
const POOL_BYTES: usize = 8 << 20;
/// The topic written.
const TOPIC: &str = "/bench_bag_writer";
/// The first message's log time (any fixed instant: both sides write the same times).
const FIRST_LOG_TIME: u64 = 1_765_000_000_000_000_000;
/// Log-time step between messages.
const STEP_NS: u64 = 100_000;

/// Who writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Writer {
    /// `rclev_bag::BagWriter`.
    Rclev,
    /// The `mcap` crate directly.
    Mcap,
}

impl Writer {
    fn name(self) -> &'static str {
        match self {
            Writer::Rclev => "rclev",
            Writer::Mcap => "mcap",
        }
    }
}

fn compression_name(c: Compression) -> &'static str {
    match c {
        Compression::None => "none",
        Compression::Zstd => "zstd",
    }
}

/// Messages of one size, made ahead.
pub(super) struct Messages {
    pool: Vec<Vec<u8>>,
}

impl Messages {
    /// Enough distinct messages of `size` payload bytes for `count` writes (about
    /// [`POOL_BYTES`], fewer if fewer are written).
    pub(super) fn new(size: usize, count: u64) -> Result<Messages> {
        let n = (POOL_BYTES / (DATA_OFFSET + size)).clamp(1, count.max(1) as usize);
        let pool = (0..n as u64)
            .map(|seq| message(size, seq))
            .collect::<Result<_>>()?;
        Ok(Messages { pool })
    }

    fn get(&self, i: u64) -> &[u8] {
        &self.pool[(i % self.pool.len() as u64) as usize]
    }

    /// Bytes of one message (CDR, header included).
    fn len(&self) -> usize {
        self.pool[0].len()
    }
}

/// What one run wrote and took.
pub(super) struct Written {
    pub messages: u64,
    pub wall_s: f64,
    pub cpu_s: f64,
    /// Bytes of the files written.
    pub file_bytes: u64,
}

/// Writes up to `count` of `messages` with `writer` into `dir`, stopping early once `limit`
/// passed: from creating the file to closing it.
pub(super) fn write(
    writer: Writer,
    messages: &Messages,
    count: u64,
    compression: Compression,
    limit: Option<Duration>,
    dir: &Path,
) -> Result<Written> {
    // The clock is looked at about every MiB: often enough to stop near the limit, rarely
    // enough to cost nothing beside writing a MiB.
    let check_every = ((1 << 20) / messages.len()).max(1) as u64;
    let over = |start: Instant, i: u64| {
        i.is_multiple_of(check_every) && limit.is_some_and(|l| start.elapsed() >= l)
    };
    let cpu = process_cpu_secs();
    let start = Instant::now();
    let mut written = 0;
    let file_bytes = match writer {
        Writer::Rclev => {
            let bag = dir.join("bag");
            let mut w = BagWriter::create(
                &bag,
                WriterOptions {
                    compression,
                    ..WriterOptions::default()
                },
            )?;
            let id = w.add_topic(BagTopic::new(TOPIC, &type_info(), vec![qos()]))?;
            while written < count && !over(start, written) {
                let t = FIRST_LOG_TIME + written * STEP_NS;
                w.write_raw(id, t, t, messages.get(written))?;
                written += 1;
            }
            w.finish()?;
            dir_bytes(&bag)
        }
        Writer::Mcap => {
            let path = dir.join("direct.mcap");
            // BagWriter's defaults, which the rclev side runs with.
            let defaults = WriterOptions::default();
            let mut w = mcap::WriteOptions::new()
                .profile("ros2")
                .library("rclev bench bag")
                .chunk_size(Some(defaults.chunk_size))
                .compression_level(defaults.compression_level)
                .compression(match compression {
                    Compression::None => None,
                    Compression::Zstd => Some(mcap::Compression::Zstd),
                })
                .calculate_chunk_crcs(false)
                .calculate_data_section_crc(false)
                .create(BufWriter::new(File::create(&path)?))?;
            let info = type_info();
            let schema = w.add_schema(
                info.type_name,
                rclev_bag::SCHEMA_ENCODING,
                rclev_bag::message_definition(&info).as_bytes(),
            )?;
            // What BagWriter puts in a channel's metadata, so that both files are alike.
            let metadata = BTreeMap::from([
                (
                    "offered_qos_profiles".to_string(),
                    rclev_bag::profiles_to_yaml(&[qos()]),
                ),
                ("topic_type_hash".to_string(), info.hash.to_string()),
            ]);
            let channel = w.add_channel(schema, TOPIC, "cdr", &metadata)?;
            while written < count && !over(start, written) {
                let t = FIRST_LOG_TIME + written * STEP_NS;
                w.write_to_known_channel(
                    &mcap::records::MessageHeader {
                        channel_id: channel,
                        sequence: 0,
                        log_time: t,
                        publish_time: t,
                    },
                    messages.get(written),
                )?;
                written += 1;
            }
            w.finish()?;
            w.into_inner().flush()?;
            std::fs::metadata(&path)?.len()
        }
    };
    Ok(Written {
        messages: written,
        wall_s: start.elapsed().as_secs_f64(),
        cpu_s: process_cpu_secs() - cpu,
        file_bytes,
    })
}

/// One JSON row of the writer part: a run, or (`rep` null) the medians over the runs.
#[derive(Serialize, Clone, Debug)]
pub struct WriterRow {
    /// `rclev` (BagWriter) or `mcap` (the crate directly).
    pub variant: &'static str,
    /// Payload bytes per message (the byte sequence's length; the CDR is 16 B more).
    pub size: usize,
    /// `none` or `zstd`.
    pub compression: &'static str,
    /// The repetition, from 0; `null` on the median rows.
    pub rep: Option<usize>,
    /// Messages written.
    pub messages: u64,
    /// Messages written per second, from creating the file to closing it.
    pub msgs_per_s: f64,
    /// Message bytes (CDR, 10⁶ B/MB) written per second.
    pub mb_per_s: f64,
    /// Process CPU time per message, µs.
    pub cpu_us_per_msg: f64,
    /// CPU over wall time (above 1 when zstd compresses on threads of its own).
    pub cpu_cores: f64,
    /// Size of the file(s) written, 10⁶ B.
    pub file_mb: f64,
}

impl WriterRow {
    fn new(writer: Writer, size: usize, c: Compression, rep: usize, w: &Written) -> Self {
        let cdr = (DATA_OFFSET + size) as f64;
        let per_s = w.messages as f64 / w.wall_s;
        WriterRow {
            variant: writer.name(),
            size,
            compression: compression_name(c),
            rep: Some(rep),
            messages: w.messages,
            msgs_per_s: per_s,
            mb_per_s: per_s * cdr / 1e6,
            cpu_us_per_msg: w.cpu_s / w.messages.max(1) as f64 * 1e6,
            cpu_cores: w.cpu_s / w.wall_s,
            file_mb: w.file_bytes as f64 / 1e6,
        }
    }
}

/// How many messages of `size` payload bytes a run writes at most.
fn count_for(size: usize) -> u64 {
    (MAX_BYTES / (DATA_OFFSET + size) as u64).min(MAX_MESSAGES)
}

/// Runs the writer part and prints its tables.
pub(super) fn run(options: &Options<'_>) -> Result<Vec<WriterRow>> {
    let writers = [Writer::Rclev, Writer::Mcap];
    let compressions = [Compression::None, Compression::Zstd];
    let limit = Duration::from_secs_f64(options.secs);
    eprintln!(
        "bag writer: BagWriter vs the mcap crate, sizes {:?} B, up to {} MiB or {} messages \
         or {} s a run, {} repetition(s), into {}",
        options.sizes,
        MAX_BYTES >> 20,
        MAX_MESSAGES,
        options.secs,
        options.repeat,
        std::env::temp_dir().display()
    );
    let pools = options
        .sizes
        .iter()
        .map(|&s| Messages::new(s, count_for(s)))
        .collect::<Result<Vec<_>>>()?;
    let mut rows = Vec::new();
    for rep in 0..options.repeat {
        for (&size, pool) in options.sizes.iter().zip(&pools) {
            for &c in &compressions {
                for i in order(writers.len(), rep) {
                    let writer = writers[i];
                    let scratch = Scratch::new("writer")?;
                    let w = write(
                        writer,
                        pool,
                        count_for(size),
                        c,
                        Some(limit),
                        scratch.path(),
                    )?;
                    let row = WriterRow::new(writer, size, c, rep, &w);
                    eprintln!(
                        "  rep {rep} {:>5} {:>8} {}: {:>9.0} msg/s {:>7.1} MB/s, {:.3} µs \
                         CPU/msg, {:.2} cores, {} msgs, {:.1} MB file",
                        row.variant,
                        size_label(size),
                        row.compression,
                        row.msgs_per_s,
                        row.mb_per_s,
                        row.cpu_us_per_msg,
                        row.cpu_cores,
                        row.messages,
                        row.file_mb
                    );
                    rows.push(row);
                }
            }
        }
    }
    let medians = medians(&rows, &options.sizes, &writers, &compressions);
    print(&rows, &medians, &options.sizes, &compressions);
    rows.extend(medians);
    Ok(rows)
}

fn medians(
    rows: &[WriterRow],
    sizes: &[usize],
    writers: &[Writer],
    compressions: &[Compression],
) -> Vec<WriterRow> {
    let mut out = Vec::new();
    for &size in sizes {
        for &c in compressions {
            for w in writers {
                let runs: Vec<&WriterRow> = rows
                    .iter()
                    .filter(|r| {
                        r.variant == w.name()
                            && r.size == size
                            && r.compression == compression_name(c)
                    })
                    .collect();
                if runs.is_empty() {
                    continue;
                }
                out.push(WriterRow {
                    variant: w.name(),
                    size,
                    compression: compression_name(c),
                    rep: None,
                    messages: median_of(&runs, |r| r.messages as f64) as u64,
                    msgs_per_s: median_of(&runs, |r| r.msgs_per_s),
                    mb_per_s: median_of(&runs, |r| r.mb_per_s),
                    cpu_us_per_msg: median_of(&runs, |r| r.cpu_us_per_msg),
                    cpu_cores: median_of(&runs, |r| r.cpu_cores),
                    file_mb: median_of(&runs, |r| r.file_mb),
                });
            }
        }
    }
    out
}

/// The ratio rclev/mcap of one column, paired by repetition.
fn paired(
    rows: &[WriterRow],
    size: usize,
    c: &str,
    f: fn(&WriterRow) -> f64,
) -> Option<(f64, f64, f64)> {
    let of = |v: &'static str| {
        rows.iter()
            .filter(move |r| r.variant == v && r.size == size && r.compression == c)
    };
    ratio_range(
        of("rclev")
            .filter_map(|a| {
                let b = of("mcap").find(|b| b.rep == a.rep)?;
                (f(b) > 0.0).then(|| f(a) / f(b))
            })
            .collect(),
    )
}

fn print(rows: &[WriterRow], medians: &[WriterRow], sizes: &[usize], cs: &[Compression]) {
    println!();
    println!("Bag writer: rclev-bag's BagWriter against the mcap crate direct (medians):");
    println!();
    println!(
        "| size | compression | writer | msgs | msgs/s | MB/s | CPU µs/msg | CPU cores | file MB |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in medians {
        println!(
            "| {} | {} | {} | {} | {:.0} | {:.1} | {:.3} | {:.2} | {:.1} |",
            size_label(r.size),
            r.compression,
            r.variant,
            r.messages,
            r.msgs_per_s,
            r.mb_per_s,
            r.cpu_us_per_msg,
            r.cpu_cores,
            r.file_mb
        );
    }
    println!();
    println!("Ratios rclev/mcap, median of the per-repetition ratios (range):");
    println!();
    println!("| size | compression | msgs/s | CPU/msg |");
    println!("| --- | --- | --- | --- |");
    for &size in sizes {
        for &c in cs {
            let c = compression_name(c);
            println!(
                "| {} | {c} | {} | {} |",
                size_label(size),
                ratio_cell(paired(rows, size, c, |r| r.msgs_per_s)),
                ratio_cell(paired(rows, size, c, |r| r.cpu_us_per_msg)),
            );
        }
    }
    println!();
    println!("Target: rclev/mcap msgs/s ≥ 0.9.");
}
