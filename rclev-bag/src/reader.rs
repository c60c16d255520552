//! [`BagReader`]: a bag's topics and messages, from its `metadata.yaml` and MCAP files — or,
//! for a bag whose recorder died before closing it, from the files alone, up to the last
//! complete chunk.
//!
//! Messages come in file order (the order they were recorded in), file after file.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rclev::msg::Message;

use crate::error::{io, mcap as mcap_err, Error, Result};
use crate::metadata::{BagMetadata, FileInfo, TopicInfo, TopicMetadata, METADATA_FILE};
use crate::qos::profiles_from_yaml;

/// A schema as the bag stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    /// `pkg/msg/Type`.
    pub name: String,
    /// `ros2msg` (or `ros2idl`; empty when the recorder did not know the type).
    pub encoding: String,
    /// The definition text.
    pub data: String,
}

/// A topic of a bag as a message's channel names it: its metadata and schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// Name, type, serialization format, offered QoS and type hash.
    pub topic: TopicMetadata,
    /// The type's definition, when the bag has it.
    pub schema: Option<Schema>,
}

/// One message of a bag, serialized.
#[derive(Debug, Clone)]
pub struct BagMessage {
    /// Its topic.
    pub channel: Arc<Channel>,
    /// When it was received, ns since the epoch.
    pub log_time: u64,
    /// When it was published, ns since the epoch (Jazzy's recorder writes the receive time).
    pub publish_time: u64,
    /// Its CDR bytes, encapsulation header included.
    pub data: Vec<u8>,
}

impl BagMessage {
    /// The message decoded as `T`, which must be its topic's type.
    pub fn decode<T: Message>(&self) -> Result<T> {
        if self.channel.topic.type_name != T::TYPE_NAME {
            return Err(Error::TypeMismatch {
                topic: self.channel.topic.name.clone(),
                expected: T::TYPE_NAME.into(),
                found: self.channel.topic.type_name.clone(),
            });
        }
        rclev::msg::from_cdr(&self.data).map_err(|source| Error::Cdr {
            topic: self.channel.topic.name.clone(),
            source,
        })
    }
}

/// A typed message of a bag, with its times.
#[derive(Debug, Clone)]
pub struct Stamped<T> {
    /// When it was received, ns since the epoch.
    pub log_time: u64,
    /// When it was published, ns since the epoch.
    pub publish_time: u64,
    /// The message.
    pub message: T,
}

/// A storage file that was not closed (its recorder died): what could be read of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incomplete {
    /// The file.
    pub path: PathBuf,
    /// The messages read from it: every one of its complete chunks.
    pub messages: u64,
    /// Why reading stopped.
    pub reason: String,
}

/// Reads a bag: a rosbag2 bag directory (with or without `metadata.yaml`) or one MCAP file.
///
/// ```no_run
/// use rclev::interfaces::std_msgs::msg::String as Text;
/// use rclev_bag::BagReader;
///
/// let bag = BagReader::open("my_bag")?;
/// for m in bag.messages_of::<Text>("/chatter")? {
///     let m = m?;
///     println!("{} {}", m.log_time, m.message.data);
/// }
/// # Ok::<(), rclev_bag::Error>(())
/// ```
pub struct BagReader {
    files: Vec<PathBuf>,
    metadata: BagMetadata,
    has_metadata_file: bool,
    incomplete: Vec<Incomplete>,
    check_crcs: bool,
}

/// The MCAP magic a complete file ends with.
const MAGIC: &[u8] = b"\x89MCAP0\r\n";

/// Whether the MCAP file at `path` ends with the magic its writer writes last.
fn is_complete(path: &Path) -> Result<bool> {
    let mut f = File::open(path).map_err(io(path))?;
    let len = f.metadata().map_err(io(path))?.len();
    if len < (MAGIC.len() * 2) as u64 {
        return Ok(false);
    }
    f.seek(SeekFrom::End(-(MAGIC.len() as i64)))
        .map_err(io(path))?;
    let mut tail = [0u8; 8];
    f.read_exact(&mut tail).map_err(io(path))?;
    Ok(tail == MAGIC)
}

/// `<stem>_<n>.mcap` → n, to order split files.
fn split_index(path: &Path) -> u64 {
    path.file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.rsplit('_').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

/// A channel of an MCAP file as a bag channel.
fn channel_of(c: &mcap::Channel<'_>, path: &Path) -> Result<Channel> {
    let qos = c
        .metadata
        .get("offered_qos_profiles")
        .map(|text| profiles_from_yaml(text))
        .transpose()
        .map_err(|reason| Error::Metadata {
            path: path.to_path_buf(),
            reason: format!("channel {}: offered_qos_profiles: {reason}", c.topic),
        })?
        .unwrap_or_default();
    let schema = c.schema.as_ref().map(|s| Schema {
        name: s.name.clone(),
        encoding: s.encoding.clone(),
        data: String::from_utf8_lossy(&s.data).into_owned(),
    });
    Ok(Channel {
        topic: TopicMetadata {
            name: c.topic.clone(),
            type_name: schema.as_ref().map(|s| s.name.clone()).unwrap_or_default(),
            serialization_format: c.message_encoding.clone(),
            offered_qos_profiles: qos,
            type_description_hash: c
                .metadata
                .get("topic_type_hash")
                .cloned()
                .unwrap_or_default(),
        },
        schema,
    })
}

/// The longest record (or decompressed chunk) read from a file of `len` bytes: a corrupt
/// length must not make the reader allocate without bound. A compressed chunk may decompress
/// to more than the file holds, so the bound is the file's length or 1 GiB, whichever is more.
fn record_limit(len: u64) -> usize {
    usize::try_from(len.max(1 << 30)).unwrap_or(usize::MAX)
}

/// A linear reader of the file at `path` (records bounded by [`record_limit`]), which checks
/// each chunk's CRC if `check_crcs`.
fn linear(path: &Path, check_crcs: bool) -> Result<mcap::io::MessageReader<BufReader<File>>> {
    let f = File::open(path).map_err(io(path))?;
    let len = f.metadata().map_err(io(path))?.len();
    let options = mcap::sans_io::LinearReaderOptions::default()
        .with_record_length_limit(record_limit(len))
        .with_validate_chunk_crcs(check_crcs);
    Ok(mcap::io::MessageReader::new_with_options(
        BufReader::with_capacity(1 << 20, f),
        options,
    ))
}

/// What one file holds, read from its messages.
struct Scan {
    file: FileInfo,
    topics: Vec<(Channel, u64)>,
    incomplete: Option<Incomplete>,
}

fn scan(path: &Path, complete: bool) -> Result<Scan> {
    let mut topics: Vec<(Channel, u64)> = Vec::new();
    let mut ids: HashMap<u16, usize> = HashMap::new();
    let (mut first, mut last, mut count) = (u64::MAX, 0u64, 0u64);
    let mut incomplete = None;
    // Counting only: the messages' chunks are checked when they are read.
    for m in linear(path, false)? {
        let m = match m {
            Ok(m) => m,
            Err(e) if !complete => {
                incomplete = Some(e.to_string());
                break;
            }
            Err(e) => return Err(mcap_err(path)(e)),
        };
        let index = match ids.get(&m.channel.id) {
            Some(i) => *i,
            None => {
                let c = channel_of(&m.channel, path)?;
                let i = match topics
                    .iter()
                    .position(|(t, _)| t.topic.name == c.topic.name)
                {
                    Some(i) => i,
                    None => {
                        topics.push((c, 0));
                        topics.len() - 1
                    }
                };
                ids.insert(m.channel.id, i);
                i
            }
        };
        topics[index].1 += 1;
        first = first.min(m.log_time);
        last = last.max(m.log_time);
        count += 1;
    }
    if !complete && incomplete.is_none() {
        incomplete = Some("the file ends without its summary and footer".into());
    }
    let first = if count == 0 { 0 } else { first };
    Ok(Scan {
        file: FileInfo {
            path: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            starting_time: first,
            duration: Duration::from_nanos(last.saturating_sub(first)),
            message_count: count,
        },
        topics,
        incomplete: incomplete.map(|reason| Incomplete {
            path: path.to_path_buf(),
            messages: count,
            reason,
        }),
    })
}

/// The metadata of `files`, read from the files themselves.
fn metadata_from_files(files: &[PathBuf]) -> Result<(BagMetadata, Vec<Incomplete>)> {
    let mut metadata = BagMetadata::default();
    let mut incomplete = Vec::new();
    for path in files {
        let s = scan(path, is_complete(path)?)?;
        for (channel, count) in s.topics {
            match metadata
                .topics
                .iter_mut()
                .find(|t| t.metadata.name == channel.topic.name)
            {
                Some(t) => t.message_count += count,
                None => metadata.topics.push(TopicInfo {
                    metadata: channel.topic,
                    message_count: count,
                }),
            }
        }
        metadata.relative_file_paths.push(s.file.path.clone());
        metadata.files.push(s.file);
        incomplete.extend(s.incomplete);
    }
    let spans: Vec<(u64, u64)> = metadata
        .files
        .iter()
        .filter(|f| f.message_count > 0)
        .map(|f| {
            let start = f.starting_time;
            (
                start,
                start + u64::try_from(f.duration.as_nanos()).unwrap_or(0),
            )
        })
        .collect();
    let start = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let end = spans.iter().map(|s| s.1).max().unwrap_or(0);
    metadata.starting_time = start;
    metadata.duration = Duration::from_nanos(end.saturating_sub(start));
    metadata.message_count = metadata.files.iter().map(|f| f.message_count).sum();
    Ok((metadata, incomplete))
}

impl BagReader {
    /// Opens a bag directory, or a single `.mcap` file. A directory without `metadata.yaml`
    /// (its recorder died) is read from its `.mcap` files: see [`incomplete`](Self::incomplete).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let meta = std::fs::metadata(path).map_err(io(path))?;
        if meta.is_file() {
            let files = vec![path.to_path_buf()];
            let (metadata, incomplete) = metadata_from_files(&files)?;
            return Ok(Self {
                files,
                metadata,
                has_metadata_file: false,
                incomplete,
                check_crcs: true,
            });
        }
        let metadata_path = path.join(METADATA_FILE);
        if metadata_path.is_file() {
            let text = crate::yaml::read_file(&metadata_path).map_err(io(&metadata_path))?;
            let metadata = BagMetadata::from_yaml(&text, &metadata_path)?;
            if metadata.storage_identifier != "mcap" {
                return Err(Error::Metadata {
                    path: metadata_path,
                    reason: format!(
                        "storage '{}': rclev reads MCAP bags only",
                        metadata.storage_identifier
                    ),
                });
            }
            let mut files = Vec::new();
            // A file listed twice is read once: a metadata.yaml listing one file 100,000 times
            // made a 5-message bag play 500,000.
            let mut listed = std::collections::HashSet::new();
            for relative in &metadata.relative_file_paths {
                if !listed.insert(relative.as_str()) {
                    continue;
                }
                // A file name, not a path out of the bag directory.
                if Path::new(relative).components().count() != 1 {
                    return Err(Error::Metadata {
                        path: metadata_path,
                        reason: format!("file '{relative}' is not in the bag directory"),
                    });
                }
                files.push(path.join(relative));
            }
            // A bag whose metadata was written but one of whose files was not closed (a
            // crash after a split) is still read up to the last complete chunk.
            let mut incomplete = Vec::new();
            for f in &files {
                if !is_complete(f)? {
                    incomplete.extend(scan(f, false)?.incomplete);
                }
            }
            return Ok(Self {
                files,
                metadata,
                has_metadata_file: true,
                incomplete,
                check_crcs: true,
            });
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(io(path))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "mcap"))
            .collect();
        if files.is_empty() {
            return Err(Error::NotABag(path.to_path_buf()));
        }
        files.sort_by_key(|p| (split_index(p), p.clone()));
        let (metadata, incomplete) = metadata_from_files(&files)?;
        Ok(Self {
            files,
            metadata,
            has_metadata_file: false,
            incomplete,
            check_crcs: true,
        })
    }

    /// Whether reading checks each chunk's data against the CRC its writer stored (default:
    /// yes; a chunk that fails is an [`Error::Corrupt`], and nothing of it is read). Off, a
    /// damaged chunk is read as it is, as far as it decodes — as MCAP readers allow.
    pub fn check_crcs(&mut self, check: bool) -> &mut Self {
        self.check_crcs = check;
        self
    }

    /// What the bag holds (from `metadata.yaml`, or read from the files without one).
    pub fn metadata(&self) -> &BagMetadata {
        &self.metadata
    }

    /// Whether the bag has `metadata.yaml` (it was closed); without it the metadata was read
    /// from the files.
    pub fn has_metadata_file(&self) -> bool {
        self.has_metadata_file
    }

    /// The files that were not closed, with how much of each could be read.
    pub fn incomplete(&self) -> &[Incomplete] {
        &self.incomplete
    }

    /// The storage files, in order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Topic `name`, if the bag has it.
    pub fn topic(&self, name: &str) -> Option<&TopicMetadata> {
        self.metadata
            .topics
            .iter()
            .map(|t| &t.metadata)
            .find(|t| t.name == name)
    }

    /// Every message, in file order.
    pub fn messages(&self) -> Messages<'_> {
        Messages {
            reader: self,
            next_file: 0,
            current: None,
            channels: HashMap::new(),
            topics: None,
        }
    }

    /// The messages of the topics named, in file order.
    pub fn messages_on<I, S>(&self, topics: I) -> Messages<'_>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Messages {
            topics: Some(topics.into_iter().map(Into::into).collect()),
            ..self.messages()
        }
    }

    /// The messages of `topic` decoded as `T` (which must be its type).
    pub fn messages_of<T: Message>(
        &self,
        topic: &str,
    ) -> Result<impl Iterator<Item = Result<Stamped<T>>> + '_> {
        let t = self
            .topic(topic)
            .ok_or_else(|| Error::UnknownTopic(topic.to_string()))?;
        if t.type_name != T::TYPE_NAME {
            return Err(Error::TypeMismatch {
                topic: topic.to_string(),
                expected: T::TYPE_NAME.into(),
                found: t.type_name.clone(),
            });
        }
        Ok(self.messages_on([topic]).map(|m| {
            let m = m?;
            Ok(Stamped {
                log_time: m.log_time,
                publish_time: m.publish_time,
                message: m.decode()?,
            })
        }))
    }
}

/// Reads a complete file's summary (its channels, schemas and chunk indexes).
fn read_summary(path: &Path) -> Result<Option<mcap::Summary>> {
    let mut f = File::open(path).map_err(io(path))?;
    let len = f.metadata().map_err(io(path))?.len();
    let mut reader = mcap::sans_io::summary_reader::SummaryReader::new_with_options(
        mcap::sans_io::summary_reader::SummaryReaderOptions::default().with_file_size(len),
    );
    while let Some(event) = reader.next_event() {
        match event.map_err(mcap_err(path))? {
            mcap::sans_io::summary_reader::SummaryReadEvent::ReadRequest(need) => {
                let n = f.read(reader.insert(need)).map_err(io(path))?;
                reader.notify_read(n);
            }
            mcap::sans_io::summary_reader::SummaryReadEvent::SeekRequest(to) => {
                let at = f.seek(to).map_err(io(path))?;
                reader.notify_seeked(at);
            }
        }
    }
    Ok(reader.finish())
}

/// What the reader needs of a chunk, found by the offset of its data: where its record
/// starts (its header holds the CRC), which chunk of the index it is, its compression.
struct ChunkAt {
    number: usize,
    start: u64,
    compression: String,
    uncompressed_size: u64,
}

/// The chunks of `summary`'s index by the offset of their data, each checked to lie within
/// the file's `len` bytes: an index entry pointing past the end is named, not met later as
/// a failed seek.
fn chunks_of(summary: &mcap::Summary, len: u64, path: &Path) -> Result<HashMap<u64, ChunkAt>> {
    let mut chunks = HashMap::with_capacity(summary.chunk_indexes.len());
    for (number, c) in summary.chunk_indexes.iter().enumerate() {
        let data = c.compressed_data_offset().ok();
        let end = c.chunk_start_offset.checked_add(c.chunk_length);
        let data_end = data.and_then(|d| d.checked_add(c.compressed_size));
        let (Some(data), Some(end), Some(data_end)) = (data, end, data_end) else {
            return Err(corrupt(
                path,
                format!("chunk {number} of the index: offsets overflow"),
            ));
        };
        if end > len || data_end > end {
            return Err(corrupt(
                path,
                format!(
                    "chunk {number} of the index is at bytes {}..{end}, past the end of the \
                     file ({len} bytes)",
                    c.chunk_start_offset
                ),
            ));
        }
        chunks.insert(
            data,
            ChunkAt {
                number,
                start: c.chunk_start_offset,
                compression: c.compression.clone(),
                uncompressed_size: c.uncompressed_size,
            },
        );
    }
    Ok(chunks)
}

fn corrupt(path: &Path, reason: String) -> Error {
    Error::Corrupt {
        path: path.to_path_buf(),
        reason,
    }
}

/// Where a chunk record's `uncompressed_crc` is, from the record's start: opcode (1), length
/// (8), message start and end times (8 + 8), uncompressed size (8).
const CHUNK_CRC_AT: u64 = 1 + 8 + 8 + 8 + 8;

/// A `Write` that only hashes what it is given.
struct Crc(crc32fast::Hasher);

impl std::io::Write for Crc {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Checks the chunk whose (compressed) data is `data` against the CRC its header holds (0:
/// none written, as rclev's writer and rosbag2's default leave it), decompressing it as a
/// stream into the hash: the chunk's records are not kept twice.
fn check_chunk_crc(file: &mut File, chunk: &ChunkAt, data: &[u8], path: &Path) -> Result<()> {
    let mut stored = [0u8; 4];
    file.seek(SeekFrom::Start(chunk.start + CHUNK_CRC_AT))
        .and_then(|_| file.read_exact(&mut stored))
        .map_err(io(path))?;
    let stored = u32::from_le_bytes(stored);
    if stored == 0 {
        return Ok(());
    }
    let mut crc = Crc(crc32fast::Hasher::new());
    match chunk.compression.as_str() {
        "" => crc.0.update(data),
        "zstd" => {
            // Bounded as the reader bounds it: no more than the index says it holds.
            let mut decoder = zstd::stream::read::Decoder::new(data).map_err(io(path))?;
            let copied = std::io::copy(&mut (&mut decoder).take(chunk.uncompressed_size), &mut crc);
            if copied.is_err() {
                return Err(corrupt(
                    path,
                    format!("chunk {} does not decompress", chunk.number),
                ));
            }
        }
        // Read by the MCAP reader, which refuses it with its own error.
        _ => return Ok(()),
    }
    let computed = crc.0.finalize();
    if computed != stored {
        return Err(Error::CrcMismatch {
            path: path.to_path_buf(),
            chunk: format!("chunk {} (at byte {})", chunk.number, chunk.start),
            stored,
            computed,
        });
    }
    Ok(())
}

/// A file being read: by its index, in log-time order (a complete file), or from start to
/// end (a file without summary, or without chunks).
enum Source {
    Indexed {
        file: File,
        summary: mcap::Summary,
        reader: mcap::sans_io::indexed_reader::IndexedReader,
        buffer: Vec<u8>,
        chunks: HashMap<u64, ChunkAt>,
        check_crcs: bool,
    },
    Linear {
        messages: mcap::io::MessageReader<BufReader<File>>,
        complete: bool,
    },
}

/// One message of a source: its MCAP channel, times and bytes.
type Raw = (Arc<mcap::Channel<'static>>, u64, u64, Vec<u8>);

impl Source {
    fn open(
        path: &Path,
        topics: Option<&std::collections::HashSet<String>>,
        check_crcs: bool,
    ) -> Result<Self> {
        let complete = is_complete(path)?;
        if complete {
            if let Some(summary) = read_summary(path)? {
                if !summary.chunk_indexes.is_empty() {
                    let len = std::fs::metadata(path).map_err(io(path))?.len();
                    let chunks = chunks_of(&summary, len, path)?;
                    let mut options = mcap::sans_io::indexed_reader::IndexedReaderOptions::new()
                        .with_record_length_limit(record_limit(len));
                    if let Some(topics) = topics {
                        options = options.include_topics(topics.iter().cloned());
                    }
                    let reader = mcap::sans_io::indexed_reader::IndexedReader::new_with_options(
                        &summary, options,
                    )
                    .map_err(mcap_err(path))?;
                    return Ok(Source::Indexed {
                        file: File::open(path).map_err(io(path))?,
                        summary,
                        reader,
                        buffer: Vec::new(),
                        chunks,
                        check_crcs,
                    });
                }
            }
        }
        Ok(Source::Linear {
            messages: linear(path, check_crcs)?,
            complete,
        })
    }

    /// The next message; `None` at the end (for a file that was not closed, at the first
    /// record that cannot be read: the end of its last complete chunk).
    fn next(&mut self, path: &Path) -> Option<Result<Raw>> {
        match self {
            Source::Indexed {
                file,
                summary,
                reader,
                buffer,
                chunks,
                check_crcs,
            } => loop {
                use mcap::sans_io::indexed_reader::IndexedReadEvent;
                let event = match reader.next_event()? {
                    Ok(e) => e,
                    Err(e) => return Some(Err(mcap_err(path)(e))),
                };
                match event {
                    IndexedReadEvent::ReadChunkRequest { offset, length } => {
                        // Every chunk of the index was checked to lie within the file.
                        let Some(chunk) = chunks.get(&offset) else {
                            return Some(Err(corrupt(
                                path,
                                format!("a chunk at byte {offset} that the index does not have"),
                            )));
                        };
                        buffer.resize(length, 0);
                        let read = file
                            .seek(SeekFrom::Start(offset))
                            .and_then(|_| file.read_exact(buffer));
                        if let Err(e) = read {
                            return Some(Err(io(path)(e)));
                        }
                        if *check_crcs {
                            if let Err(e) = check_chunk_crc(file, chunk, buffer, path) {
                                return Some(Err(e));
                            }
                        }
                        if let Err(e) = reader.insert_chunk_record_data(offset, buffer) {
                            return Some(Err(mcap_err(path)(e)));
                        }
                    }
                    IndexedReadEvent::Message { header, data } => {
                        let Some(channel) = summary.channels.get(&header.channel_id) else {
                            return Some(Err(Error::Metadata {
                                path: path.to_path_buf(),
                                reason: format!(
                                    "a message of channel {}, which the file does not have",
                                    header.channel_id
                                ),
                            }));
                        };
                        return Some(Ok((
                            channel.clone(),
                            header.log_time,
                            header.publish_time,
                            data.to_vec(),
                        )));
                    }
                }
            },
            Source::Linear { messages, complete } => match messages.next()? {
                Ok(m) => Some(Ok((
                    m.channel,
                    m.log_time,
                    m.publish_time,
                    m.data.into_owned(),
                ))),
                Err(_) if !*complete => None,
                Err(e) => Some(Err(mcap_err(path)(e))),
            },
        }
    }
}

/// The messages of a bag ([`BagReader::messages`]): file after file, each file's in log-time
/// order when it has its index (as rosbag2 reads them), else in the order they were written.
pub struct Messages<'a> {
    reader: &'a BagReader,
    next_file: usize,
    current: Option<(usize, Source)>,
    /// Bag channels by file and MCAP channel id.
    channels: HashMap<(usize, u16), Arc<Channel>>,
    topics: Option<std::collections::HashSet<String>>,
}

impl Iterator for Messages<'_> {
    type Item = Result<BagMessage>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.current.is_none() {
                let path = self.reader.files.get(self.next_file)?;
                let index = self.next_file;
                self.next_file += 1;
                match Source::open(path, self.topics.as_ref(), self.reader.check_crcs) {
                    Ok(source) => self.current = Some((index, source)),
                    Err(e) => return Some(Err(e)),
                }
            }
            let (index, source) = self.current.as_mut()?;
            let index = *index;
            let path = &self.reader.files[index];
            let (mcap_channel, log_time, publish_time, data) = match source.next(path) {
                None => {
                    self.current = None;
                    continue;
                }
                Some(Err(e)) => {
                    self.current = None;
                    return Some(Err(e));
                }
                Some(Ok(m)) => m,
            };
            if let Some(topics) = &self.topics {
                if !topics.contains(&mcap_channel.topic) {
                    continue;
                }
            }
            let key = (index, mcap_channel.id);
            let channel = match self.channels.get(&key) {
                Some(c) => c.clone(),
                None => match channel_of(&mcap_channel, path) {
                    Ok(c) => {
                        let c = Arc::new(c);
                        self.channels.insert(key, c.clone());
                        c
                    }
                    Err(e) => return Some(Err(e)),
                },
            };
            return Some(Ok(BagMessage {
                channel,
                log_time,
                publish_time,
                data,
            }));
        }
    }
}
