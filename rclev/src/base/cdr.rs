//! The CDR runtime that generated message code calls: [`CdrWriter`] and [`CdrReader`].
//!
//! The wire format is plain CDR (XCDR1), as ROS 2 over DDS uses it. A DDS payload is a 4-byte
//! encapsulation header (`00 01 00 00` for little-endian `CDR_LE`, `00 00 00 00` for
//! big-endian `CDR_BE`) followed by the message body. The rules this module implements:
//!
//! - **Alignment is counted from the body start**, the byte after the header. Every primitive
//!   is aligned to its own size, 8-byte types (`u64`, `i64`, `f64`) included (XCDR2 caps this
//!   at 4, but ROS 2 uses XCDR1). Padding is written as zeros and skipped unread on decode.
//! - `bool`, `u8` and `i8` are one byte each; a `bool` must be 0 or 1.
//! - A **string** is a `u32` length that counts the terminating NUL, then the bytes, then the
//!   NUL: `""` is `01 00 00 00 00`. A bound (`string<=N>`) counts bytes without the NUL.
//! - A **wstring** follows ROS 2 Jazzy's Fast DDS typesupport: a `u32` count of UTF-16 code
//!   units (no terminator), then each unit as a 4-byte (`wchar_t`) value. Its bound counts
//!   UTF-16 units. Other DDS stacks (newer Cyclone DDS, ros2-client) use 2-byte units, which
//!   this module does not read.
//! - A **sequence** is a `u32` element count, then the elements. An empty sequence is just the
//!   count: **no alignment padding for the element type** follows it. A fixed **array** has no
//!   count; its elements are aligned like single values, so a primitive array is aligned once.
//! - Bounded strings and sequences have the same wire form as unbounded ones; the bound is
//!   enforced on both encode and decode ([`CdrError::BoundExceeded`]).
//!
//! The writer always writes little-endian (what every ROS 2 peer sends); the reader takes
//! both byte orders. Decoding never panics and never allocates more than the remaining input
//! could hold: every length is checked against the bytes left before anything is reserved.
//! Bytes after the message are ignored, as are the header's option bytes.
//!
//! Primitive arrays and sequences are copied in bulk (one `memcpy` via [`bytemuck`]) when
//! the byte order matches the host, and swapped element by element otherwise.

use thiserror::Error;

/// Whether this host is big-endian: the writer then swaps every value it writes.
const HOST_BE: bool = cfg!(target_endian = "big");

/// Errors from encoding or decoding CDR.
///
/// Offsets are body offsets: counted from the byte after the encapsulation header.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CdrError {
    /// The input ended early: `needed` bytes (alignment padding included) were needed at
    /// body offset `offset`, and only `remaining` were left.
    #[error(
        "CDR input truncated: needed {needed} bytes at body offset {offset}, {remaining} left"
    )]
    Truncated {
        /// Body offset where the read started (before any alignment padding).
        offset: usize,
        /// Bytes needed from `offset`, padding included.
        needed: usize,
        /// Bytes left from `offset`.
        remaining: usize,
    },
    /// A string, wstring or sequence is longer than its bound (on encode or decode).
    #[error("{what} of length {len} exceeds its bound {bound}")]
    BoundExceeded {
        /// `"string"`, `"wstring"` or `"sequence"`.
        what: &'static str,
        /// The actual length: bytes without the NUL for a string, UTF-16 units for a
        /// wstring, elements for a sequence.
        len: usize,
        /// The bound it exceeds.
        bound: usize,
    },
    /// A length to encode does not fit the `u32` length prefix.
    #[error("length {len} does not fit a u32 CDR length")]
    TooLong {
        /// The length that was to be written (for a string, its bytes plus the NUL).
        len: usize,
    },
    /// A string's bytes are not UTF-8, or a wstring holds a unit above `0xFFFF` or an
    /// unpaired UTF-16 surrogate (decode).
    #[error("invalid text at body offset {offset}: {reason}")]
    InvalidText {
        /// Body offset of the offending byte or unit (for an unpaired surrogate: of the
        /// wstring's first unit).
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// A `bool` byte other than 0 or 1.
    #[error("invalid bool byte {value:#04x} at body offset {offset}")]
    InvalidBool {
        /// Body offset of the byte.
        offset: usize,
        /// The byte read.
        value: u8,
    },
    /// The encapsulation header is missing or names a representation other than plain CDR
    /// (`CDR_BE` `00 00`, `CDR_LE` `00 01`).
    #[error("bad CDR encapsulation: {detail}")]
    Encapsulation {
        /// What is wrong.
        detail: String,
    },
    /// A message encoded into a fixed buffer ([`CdrWriter::in_slice`]) did not fit in it.
    #[error("the CDR encoding does not fit in a buffer of {capacity} bytes")]
    NoRoom {
        /// The buffer's size.
        capacity: usize,
    },
}

mod sealed {
    /// Keeps [`super::Primitive`] to the ten types whose CDR alignment equals their size.
    pub trait Sealed {}
}

/// A primitive CDR type that is copied in bulk: `u8`, `i8`, `u16`, `i16`, `u32`, `i32`, `u64`,
/// `i64`, `f32` and `f64`.
///
/// Each is aligned to its own size. `bool` is not one (not every byte is a valid `bool`); it
/// has its own methods. The trait is sealed.
pub trait Primitive: sealed::Sealed + Copy + Default + bytemuck::Pod + 'static {
    /// Size in bytes, which is also the CDR alignment.
    const SIZE: usize = std::mem::size_of::<Self>();

    /// The value with its bytes in reverse order.
    fn swap_bytes(self) -> Self;
}

macro_rules! primitive_int {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Primitive for $t {
            #[inline]
            fn swap_bytes(self) -> Self {
                <$t>::swap_bytes(self)
            }
        }
    )*};
}
primitive_int!(u8, i8, u16, i16, u32, i32, u64, i64);

macro_rules! primitive_float {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Primitive for $t {
            #[inline]
            fn swap_bytes(self) -> Self {
                <$t>::from_bits(self.to_bits().swap_bytes())
            }
        }
    )*};
}
primitive_float!(f32, f64);

/// Checks `len` against an optional bound.
#[inline]
fn check_bound(what: &'static str, len: usize, bound: Option<usize>) -> Result<(), CdrError> {
    match bound {
        Some(bound) if len > bound => Err(CdrError::BoundExceeded { what, len, bound }),
        _ => Ok(()),
    }
}

/// Converts a length to the `u32` that prefixes it on the wire.
#[inline]
fn wire_len(len: usize) -> Result<u32, CdrError> {
    u32::try_from(len).map_err(|_| CdrError::TooLong { len })
}

/// Appends a CDR body to a byte vector, little-endian.
///
/// Infallible writes (primitives, fixed arrays of primitives) return nothing; anything with
/// a length or a bound returns `Result`. On error the buffer may hold a partial value and
/// should be discarded.
#[derive(Debug)]
pub struct CdrWriter<'a> {
    buf: Out<'a>,
    /// `buf.len()` at creation: where the body starts, and what alignment counts from.
    origin: usize,
}

/// Where a [`CdrWriter`] writes: a vector it grows, or a fixed slice (a transport's own
/// payload buffer, so that a message is encoded where it is sent from, without a copy).
/// A write that does not fit a slice is dropped and remembered: the encoding as a whole then
/// fails with [`CdrError::NoRoom`] (see [`CdrWriter::finish_in_slice`]). Or nowhere: only the
/// length is counted, to size such a buffer before encoding into it.
#[derive(Debug)]
enum Out<'a> {
    Vec(&'a mut Vec<u8>),
    Slice {
        buf: &'a mut [u8],
        len: usize,
        overflowed: bool,
    },
    Count(usize),
}

impl Out<'_> {
    #[inline]
    fn len(&self) -> usize {
        match self {
            Out::Vec(v) => v.len(),
            Out::Slice { len, .. } => *len,
            Out::Count(len) => *len,
        }
    }

    #[inline]
    fn reserve(&mut self, additional: usize) {
        if let Out::Vec(v) = self {
            v.reserve(additional);
        }
    }

    #[inline]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        match self {
            Out::Vec(v) => v.extend_from_slice(bytes),
            Out::Slice {
                buf,
                len,
                overflowed,
            } => match buf.get_mut(*len..*len + bytes.len()) {
                Some(room) => {
                    room.copy_from_slice(bytes);
                    *len += bytes.len();
                }
                None => *overflowed = true,
            },
            Out::Count(len) => *len += bytes.len(),
        }
    }

    #[inline]
    fn push(&mut self, byte: u8) {
        match self {
            Out::Vec(v) => v.push(byte),
            slice => slice.extend_from_slice(&[byte]),
        }
    }
}

macro_rules! write_typed {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        #[doc = concat!("Writes a `", stringify!($t), "`, aligned to its size.")]
        #[inline]
        pub fn $name(&mut self, v: $t) {
            self.write(v);
        }
    )*};
}

impl<'a> CdrWriter<'a> {
    /// A writer that appends to `buf`. Alignment is measured from `buf.len()` now, so write
    /// the encapsulation header first (or nothing, for a bare body).
    pub fn new(buf: &'a mut Vec<u8>) -> Self {
        let origin = buf.len();
        CdrWriter {
            buf: Out::Vec(buf),
            origin,
        }
    }

    /// A writer into the fixed buffer `buf`, from its start; alignment counts from
    /// `body_start` (after an encapsulation header the caller writes first with
    /// [`write_raw`](Self::write_raw)). End with [`finish_in_slice`](Self::finish_in_slice).
    pub fn in_slice(buf: &'a mut [u8], body_start: usize) -> Self {
        CdrWriter {
            buf: Out::Slice {
                buf,
                len: 0,
                overflowed: false,
            },
            origin: body_start,
        }
    }

    /// A writer that writes nothing and only counts: its
    /// [`finish_in_slice`](Self::finish_in_slice) is the length the same writes take in a
    /// buffer (alignment counted from `body_start`, as for [`in_slice`](Self::in_slice)). A
    /// transport sizes its own payload buffer with it, then encodes into that buffer once.
    pub fn counting(body_start: usize) -> CdrWriter<'static> {
        CdrWriter {
            buf: Out::Count(0),
            origin: body_start,
        }
    }

    /// Writes bytes as they are, with no alignment (an encapsulation header).
    pub fn write_raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// How many bytes a writer made with [`in_slice`](Self::in_slice) wrote, or
    /// [`CdrError::NoRoom`] if they did not all fit; for a vector writer, the vector's length;
    /// for a [`counting`](Self::counting) one, the bytes counted.
    pub fn finish_in_slice(self) -> Result<usize, CdrError> {
        match self.buf {
            Out::Slice {
                buf,
                overflowed: true,
                ..
            } => Err(CdrError::NoRoom {
                capacity: buf.len(),
            }),
            out => Ok(out.len()),
        }
    }

    /// Reserves room for at least `additional` more bytes.
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        self.buf.reserve(additional);
    }

    /// Writes zero padding up to the next multiple of `align` (a power of two) from the body
    /// start.
    #[inline]
    fn align(&mut self, align: usize) {
        debug_assert!(align.is_power_of_two());
        let pad = self.origin.wrapping_sub(self.buf.len()) & (align - 1);
        if pad != 0 {
            self.buf.extend_from_slice(&[0; 8][..pad]);
        }
    }

    /// Appends a primitive little-endian, without alignment.
    #[inline]
    fn put<T: Primitive>(&mut self, v: T) {
        let v = if HOST_BE { v.swap_bytes() } else { v };
        self.buf.extend_from_slice(bytemuck::bytes_of(&v));
    }

    /// Writes a primitive aligned to its size: the generic form of `write_u8` … `write_f64`.
    #[inline]
    pub fn write<T: Primitive>(&mut self, v: T) {
        self.align(T::SIZE);
        self.put(v);
    }

    /// Writes a `bool` as one byte, 0 or 1.
    #[inline]
    pub fn write_bool(&mut self, v: bool) {
        self.buf.push(u8::from(v));
    }

    write_typed!(
        write_u8: u8, write_i8: i8, write_u16: u16, write_i16: i16, write_u32: u32,
        write_i32: i32, write_u64: u64, write_i64: i64, write_f32: f32, write_f64: f64,
    );

    /// Writes a string: `u32` length including the NUL, the bytes, the NUL.
    ///
    /// `bound` counts bytes without the NUL, as rosidl's `string<=N>` does. A string with
    /// an interior NUL is written as is; C/C++ peers will see it cut at that NUL.
    pub fn write_string(&mut self, s: &str, bound: Option<usize>) -> Result<(), CdrError> {
        check_bound("string", s.len(), bound)?;
        let len = wire_len(s.len() + 1)?;
        self.reserve(3 + 4 + s.len() + 1);
        self.write_u32(len);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
        Ok(())
    }

    /// Writes a wstring in the ROS 2 Jazzy Fast DDS layout: `u32` count of UTF-16 units (no
    /// terminator), then each unit as a 4-byte value. `bound` counts UTF-16 units.
    pub fn write_wstring(&mut self, s: &str, bound: Option<usize>) -> Result<(), CdrError> {
        let units = s.encode_utf16().count();
        check_bound("wstring", units, bound)?;
        let len = wire_len(units)?;
        self.reserve(3 + 4 + 4 * units);
        self.write_u32(len);
        // Aligned already: the units follow a u32.
        s.encode_utf16().for_each(|unit| self.put(u32::from(unit)));
        Ok(())
    }

    /// Writes a sequence length prefix (`u32`, aligned to 4) after checking it against
    /// `bound`. Generated code writes the elements of a nested-message sequence after it.
    #[inline]
    pub fn write_len(&mut self, len: usize, bound: Option<usize>) -> Result<(), CdrError> {
        check_bound("sequence", len, bound)?;
        let len = wire_len(len)?;
        self.write_u32(len);
        Ok(())
    }

    /// Writes primitive elements back to back, aligned once (if there are any) to the
    /// element size. One copy on little-endian hosts.
    #[inline]
    fn write_elements<T: Primitive>(&mut self, a: &[T]) {
        if a.is_empty() {
            return;
        }
        self.reserve(7 + std::mem::size_of_val(a));
        self.align(T::SIZE);
        if HOST_BE {
            for &v in a {
                self.buf
                    .extend_from_slice(bytemuck::bytes_of(&v.swap_bytes()));
            }
        } else {
            self.buf.extend_from_slice(bytemuck::cast_slice(a));
        }
    }

    /// Writes a fixed-size array of primitives: no length prefix.
    pub fn write_array<T: Primitive>(&mut self, a: &[T]) {
        self.write_elements(a);
    }

    /// Writes a sequence of primitives: the length prefix, then the elements (with no
    /// element alignment padding when empty).
    pub fn write_sequence<T: Primitive>(
        &mut self,
        s: &[T],
        bound: Option<usize>,
    ) -> Result<(), CdrError> {
        self.write_len(s.len(), bound)?;
        self.write_elements(s);
        Ok(())
    }

    /// Writes a fixed-size `bool` array: one byte per element, no length prefix.
    pub fn write_bool_array(&mut self, a: &[bool]) {
        // A `bool` is one byte, 0 or 1: the slice's bytes are its CDR encoding.
        self.buf.extend_from_slice(bytemuck::cast_slice(a));
    }

    /// Writes a `bool` sequence: the length prefix, then one byte per element.
    pub fn write_bool_sequence(
        &mut self,
        s: &[bool],
        bound: Option<usize>,
    ) -> Result<(), CdrError> {
        self.write_len(s.len(), bound)?;
        self.write_bool_array(s);
        Ok(())
    }

    /// Writes a fixed-size string array; `bound` applies to each string.
    pub fn write_string_array(
        &mut self,
        a: &[String],
        bound: Option<usize>,
    ) -> Result<(), CdrError> {
        a.iter().try_for_each(|s| self.write_string(s, bound))
    }

    /// Writes a string sequence: `bound` limits the element count, `string_bound` each
    /// string.
    pub fn write_string_sequence(
        &mut self,
        s: &[String],
        bound: Option<usize>,
        string_bound: Option<usize>,
    ) -> Result<(), CdrError> {
        self.write_len(s.len(), bound)?;
        self.write_string_array(s, string_bound)
    }

    /// Writes a fixed-size wstring array; `bound` applies to each wstring.
    pub fn write_wstring_array(
        &mut self,
        a: &[String],
        bound: Option<usize>,
    ) -> Result<(), CdrError> {
        a.iter().try_for_each(|s| self.write_wstring(s, bound))
    }

    /// Writes a wstring sequence: `bound` limits the element count, `string_bound` each
    /// wstring.
    pub fn write_wstring_sequence(
        &mut self,
        s: &[String],
        bound: Option<usize>,
        string_bound: Option<usize>,
    ) -> Result<(), CdrError> {
        self.write_len(s.len(), bound)?;
        self.write_wstring_array(s, string_bound)
    }
}

/// Reads a CDR body, little- or big-endian.
///
/// Every method returns an error instead of panicking, whatever the input. After an error
/// the reader's position is unspecified; discard it.
#[derive(Debug, Clone)]
pub struct CdrReader<'a> {
    /// The body, after the encapsulation header.
    data: &'a [u8],
    /// Offset of the next byte in `data`; alignment counts from 0.
    pos: usize,
    /// Whether values are swapped on read: the input's byte order differs from the host's.
    swap: bool,
}

macro_rules! read_typed {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        #[doc = concat!("Reads a `", stringify!($t), "`, aligned to its size.")]
        #[inline]
        pub fn $name(&mut self) -> Result<$t, CdrError> {
            self.read()
        }
    )*};
}

impl<'a> CdrReader<'a> {
    /// A reader over a bare body (no encapsulation header) in the given byte order.
    pub fn new(body: &'a [u8], big_endian: bool) -> Self {
        CdrReader {
            data: body,
            pos: 0,
            swap: big_endian != HOST_BE,
        }
    }

    /// Parses the 4-byte encapsulation header (`CDR_LE` `00 01` or `CDR_BE` `00 00`; the two
    /// option bytes are ignored) and returns a reader over the body after it.
    pub fn from_encapsulated(bytes: &'a [u8]) -> Result<Self, CdrError> {
        let Some(([r0, r1, _, _], body)) = bytes.split_first_chunk::<4>() else {
            return Err(CdrError::Encapsulation {
                detail: format!("{} bytes, shorter than the 4-byte header", bytes.len()),
            });
        };
        match [*r0, *r1] {
            [0x00, 0x01] => Ok(Self::new(body, false)),
            [0x00, 0x00] => Ok(Self::new(body, true)),
            _ => Err(CdrError::Encapsulation {
                detail: format!(
                    "representation {r0:02x} {r1:02x} is not CDR_BE (00 00) or CDR_LE (00 01)"
                ),
            }),
        }
    }

    /// Body offset of the next byte to read.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left after the current position.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Skips padding to the next multiple of `align` (a power of two), then takes `n` bytes.
    #[inline]
    fn take(&mut self, align: usize, n: usize) -> Result<&'a [u8], CdrError> {
        debug_assert!(align.is_power_of_two());
        let pad = self.pos.wrapping_neg() & (align - 1);
        let remaining = self.remaining();
        match pad.checked_add(n) {
            Some(total) if total <= remaining => {
                let start = self.pos + pad;
                self.pos = start + n;
                Ok(&self.data[start..start + n])
            }
            _ => Err(CdrError::Truncated {
                offset: self.pos,
                needed: pad.saturating_add(n),
                remaining,
            }),
        }
    }

    /// Reads a primitive aligned to its size: the generic form of `read_u8` … `read_f64`.
    #[inline]
    pub fn read<T: Primitive>(&mut self) -> Result<T, CdrError> {
        let v: T = bytemuck::pod_read_unaligned(self.take(T::SIZE, T::SIZE)?);
        Ok(if self.swap { v.swap_bytes() } else { v })
    }

    /// Reads a `bool`; a byte other than 0 or 1 is [`CdrError::InvalidBool`].
    #[inline]
    pub fn read_bool(&mut self) -> Result<bool, CdrError> {
        let offset = self.pos;
        match self.take(1, 1)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            value => Err(CdrError::InvalidBool { offset, value }),
        }
    }

    read_typed!(
        read_u8: u8, read_i8: i8, read_u16: u16, read_i16: i16, read_u32: u32,
        read_i32: i32, read_u64: u64, read_i64: i64, read_f32: f32, read_f64: f64,
    );

    /// Reads a `u32` length prefix as `usize`.
    #[inline]
    fn read_raw_len(&mut self) -> Result<usize, CdrError> {
        // Lossless on 32- and 64-bit targets; elsewhere an unrepresentable length saturates
        // and then fails the remaining-bytes check.
        Ok(usize::try_from(self.read_u32()?).unwrap_or(usize::MAX))
    }

    /// Reads a string (`u32` length including the NUL, bytes, NUL).
    ///
    /// Like rclpy, it accepts a length of 0 (read as `""`) and a missing NUL (all `len` bytes
    /// are the text). `bound` counts bytes without the NUL. Bytes that are not UTF-8 are
    /// [`CdrError::InvalidText`].
    pub fn read_string(&mut self, bound: Option<usize>) -> Result<String, CdrError> {
        let len = self.read_raw_len()?;
        let start = self.pos;
        let bytes = self.take(1, len)?;
        let text = match bytes.split_last() {
            Some((0, text)) => text,
            _ => bytes,
        };
        check_bound("string", text.len(), bound)?;
        match std::str::from_utf8(text) {
            Ok(s) => Ok(s.to_owned()),
            Err(e) => Err(CdrError::InvalidText {
                offset: start + e.valid_up_to(),
                reason: e.to_string(),
            }),
        }
    }

    /// Reads a wstring in the ROS 2 Jazzy Fast DDS layout (`u32` count of UTF-16 units, then
    /// 4 bytes per unit). `bound` counts UTF-16 units.
    pub fn read_wstring(&mut self, bound: Option<usize>) -> Result<String, CdrError> {
        let count = self.read_raw_len()?;
        check_bound("wstring", count, bound)?;
        let start = self.pos;
        let bytes = self.take(4, count.saturating_mul(4))?;
        let mut units = Vec::with_capacity(count);
        for (i, chunk) in bytes.chunks_exact(4).enumerate() {
            let unit: u32 = bytemuck::pod_read_unaligned(chunk);
            let unit = if self.swap { unit.swap_bytes() } else { unit };
            match u16::try_from(unit) {
                Ok(u) => units.push(u),
                Err(_) => {
                    return Err(CdrError::InvalidText {
                        offset: start + 4 * i,
                        reason: format!("wstring unit {unit:#x} is above 0xFFFF"),
                    })
                }
            }
        }
        String::from_utf16(&units).map_err(|e| CdrError::InvalidText {
            offset: start,
            reason: e.to_string(),
        })
    }

    /// Reads a sequence length prefix, checks it against `bound`, and checks that at least
    /// `len * min_element_size` bytes remain, so that a lying length can never cause a large
    /// allocation. Generated code reads a nested-message sequence with it
    /// (`min_element_size` 1: every struct takes at least one byte).
    pub fn read_len(
        &mut self,
        bound: Option<usize>,
        min_element_size: usize,
    ) -> Result<usize, CdrError> {
        let len = self.read_raw_len()?;
        check_bound("sequence", len, bound)?;
        let needed = len.saturating_mul(min_element_size);
        if needed > self.remaining() {
            return Err(CdrError::Truncated {
                offset: self.pos,
                needed,
                remaining: self.remaining(),
            });
        }
        Ok(len)
    }

    /// Fills `out` with primitive elements, aligned once (if there are any): one copy, then a
    /// byte swap in place if the byte orders differ.
    #[inline]
    fn read_elements<T: Primitive>(&mut self, out: &mut [T]) -> Result<(), CdrError> {
        if out.is_empty() {
            return Ok(());
        }
        let bytes = self.take(T::SIZE, std::mem::size_of_val(out))?;
        bytemuck::cast_slice_mut::<T, u8>(out).copy_from_slice(bytes);
        if self.swap && T::SIZE > 1 {
            out.iter_mut().for_each(|v| *v = v.swap_bytes());
        }
        Ok(())
    }

    /// Reads a fixed-size array of `N` primitives (no length prefix).
    pub fn read_array<T: Primitive, const N: usize>(&mut self) -> Result<[T; N], CdrError> {
        let mut out = [T::default(); N];
        self.read_elements(&mut out)?;
        Ok(out)
    }

    /// Reads a sequence of primitives. The length is checked against `bound` and the input
    /// before the vector is allocated.
    pub fn read_sequence<T: Primitive>(
        &mut self,
        bound: Option<usize>,
    ) -> Result<Vec<T>, CdrError> {
        let len = self.read_len(bound, T::SIZE)?;
        let mut out = vec![T::zeroed(); len];
        self.read_elements(&mut out)?;
        Ok(out)
    }

    /// Takes `n` bytes as `bool`s, each 0 or 1.
    #[inline]
    fn read_bool_bytes(&mut self, n: usize) -> Result<&'a [u8], CdrError> {
        let start = self.pos;
        let bytes = self.take(1, n)?;
        match bytes.iter().position(|&b| b > 1) {
            None => Ok(bytes),
            Some(i) => Err(CdrError::InvalidBool {
                offset: start + i,
                value: bytes[i],
            }),
        }
    }

    /// Reads a fixed-size array of `N` `bool`s.
    pub fn read_bool_array<const N: usize>(&mut self) -> Result<[bool; N], CdrError> {
        let bytes = self.read_bool_bytes(N)?;
        let mut out = [false; N];
        out.iter_mut().zip(bytes).for_each(|(o, &b)| *o = b != 0);
        Ok(out)
    }

    /// Reads a `bool` sequence.
    pub fn read_bool_sequence(&mut self, bound: Option<usize>) -> Result<Vec<bool>, CdrError> {
        let len = self.read_len(bound, 1)?;
        Ok(self.read_bool_bytes(len)?.iter().map(|&b| b != 0).collect())
    }

    /// Reads a fixed-size array of `N` strings; `bound` applies to each.
    pub fn read_string_array<const N: usize>(
        &mut self,
        bound: Option<usize>,
    ) -> Result<[String; N], CdrError> {
        self.read_text_array(bound, Self::read_string)
    }

    /// Reads a string sequence: `bound` limits the element count, `string_bound` each string.
    pub fn read_string_sequence(
        &mut self,
        bound: Option<usize>,
        string_bound: Option<usize>,
    ) -> Result<Vec<String>, CdrError> {
        // Every string takes at least its 4-byte length prefix.
        let len = self.read_len(bound, 4)?;
        self.read_text_sequence(len, string_bound, Self::read_string)
    }

    /// Reads a fixed-size array of `N` wstrings; `bound` applies to each.
    pub fn read_wstring_array<const N: usize>(
        &mut self,
        bound: Option<usize>,
    ) -> Result<[String; N], CdrError> {
        self.read_text_array(bound, Self::read_wstring)
    }

    /// `len` strings or wstrings read by `read`, each within `bound`. A `String` is 24 bytes
    /// in memory but as little as 4 on the wire, so the vector reserves no more memory than
    /// twice the rest of the input, and grows as strings really arrive.
    fn read_text_sequence(
        &mut self,
        len: usize,
        bound: Option<usize>,
        read: fn(&mut Self, Option<usize>) -> Result<String, CdrError>,
    ) -> Result<Vec<String>, CdrError> {
        let mut out = Vec::with_capacity(len.min(2 * self.remaining() / size_of::<String>()));
        for _ in 0..len {
            out.push(read(self, bound)?);
        }
        Ok(out)
    }

    /// `N` strings or wstrings read by `read`, each within `bound`.
    fn read_text_array<const N: usize>(
        &mut self,
        bound: Option<usize>,
        read: fn(&mut Self, Option<usize>) -> Result<String, CdrError>,
    ) -> Result<[String; N], CdrError> {
        let mut out: [String; N] = std::array::from_fn(|_| String::new());
        for s in &mut out {
            *s = read(self, bound)?;
        }
        Ok(out)
    }

    /// Reads a wstring sequence: `bound` limits the element count, `string_bound` each
    /// wstring.
    pub fn read_wstring_sequence(
        &mut self,
        bound: Option<usize>,
        string_bound: Option<usize>,
    ) -> Result<Vec<String>, CdrError> {
        let len = self.read_len(bound, 4)?;
        self.read_text_sequence(len, string_bound, Self::read_wstring)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Hex without spaces, for readable golden comparisons.
    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// A golden hex string written with spaces between fields.
    fn golden(spaced: &str) -> String {
        spaced.replace(' ', "")
    }

    /// Encodes a body with a fresh writer.
    fn encode(f: impl FnOnce(&mut CdrWriter)) -> Vec<u8> {
        let mut buf = Vec::new();
        f(&mut CdrWriter::new(&mut buf));
        buf
    }

    /// Asserts that `f` writes `want`: hex, with spaces between fields for the reader.
    #[track_caller]
    fn assert_writes(f: impl FnOnce(&mut CdrWriter), want: &str) {
        let mut buf = Vec::new();
        f(&mut CdrWriter::new(&mut buf));
        assert_eq!(hex(&buf), golden(want));
    }

    #[test]
    fn primitives_golden() {
        assert_writes(|w| w.write_bool(true), "01");
        assert_writes(|w| w.write_i8(-2), "fe");
        let after_u8 = |f: fn(&mut CdrWriter), want| {
            assert_writes(
                |w| {
                    w.write_u8(1);
                    f(w)
                },
                want,
            )
        };
        after_u8(|w| w.write_u16(0x0203), "01 00 0302");
        after_u8(|w| w.write_i16(-2), "01 00 feff");
        after_u8(|w| w.write_u32(0x0a0b_0c0d), "01 000000 0d0c0b0a");
        after_u8(|w| w.write_i32(-1), "01 000000 ffffffff");
        after_u8(|w| w.write_f32(1.0), "01 000000 0000803f");
        after_u8(
            |w| w.write_u64(0x0102_0304_0506_0708),
            "01 00000000000000 0807060504030201",
        );
        after_u8(|w| w.write_i64(-2), "01 00000000000000 feffffffffffffff");
        after_u8(|w| w.write_f64(2.0), "01 00000000000000 0000000000000040");
        after_u8(|w| w.write_bool(true), "01 01");
        // 8-byte alignment also after a 4-byte value.
        after_u8(
            |w| {
                w.write_u32(2);
                w.write_f64(2.0)
            },
            "01 000000 02000000 0000000000000040",
        );
        // An 8-byte value right after another needs no padding.
        after_u8(
            |w| {
                w.write_f64(0.0);
                w.write_u64(1)
            },
            "01 00000000000000 0000000000000000 0100000000000000",
        );
        // The generic form is the same code.
        after_u8(|w| w.write(7i32), "01 000000 07000000");
    }

    #[test]
    fn alignment_counts_from_the_body_start() {
        // After a 4-byte header, an f64 following a u8 is padded to body offset 8, not to a
        // buffer offset that is a multiple of 8.
        let mut buf = vec![0x00, 0x01, 0x00, 0x00];
        let mut w = CdrWriter::new(&mut buf);
        w.write_u8(1);
        w.write_f64(2.0);
        assert_eq!(
            hex(&buf),
            golden("00010000 01 00000000000000 0000000000000040")
        );
        // An odd origin too.
        let mut buf = vec![0xaa; 3];
        let mut w = CdrWriter::new(&mut buf);
        w.write_u8(1);
        w.write_u32(2);
        assert_eq!(hex(&buf[3..]), golden("01 000000 02000000"));

        let mut r = CdrReader::from_encapsulated(&[0, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0]).unwrap();
        assert_eq!(r.read_u8(), Ok(1));
        assert_eq!(r.read_u32(), Ok(2));
        assert_eq!((r.position(), r.remaining()), (8, 0));
    }

    /// `uint8 a=1; float64 b=2.0; float64[] s=[]; int32 c=7`, byte-identical with
    /// cyclonedds-idl and rosbags: the empty sequence adds no padding for its f64 elements.
    #[test]
    fn empty_sequence_has_no_element_padding() {
        let body = encode(|w| {
            w.write_u8(1);
            w.write_f64(2.0);
            w.write_sequence::<f64>(&[], None).unwrap();
            w.write_i32(7);
        });
        assert_eq!(
            hex(&body),
            golden("01 00000000000000 0000000000000040 00000000 07000000")
        );
        let mut r = CdrReader::new(&body, false);
        assert_eq!(r.read_u8(), Ok(1));
        assert_eq!(r.read_f64(), Ok(2.0));
        assert_eq!(r.read_sequence::<f64>(None), Ok(vec![]));
        assert_eq!(r.read_i32(), Ok(7));
    }

    #[test]
    fn arrays_and_sequences_golden() {
        // A non-empty f64 sequence pads after its length to body offset 8.
        assert_writes(
            |w| w.write_sequence(&[1.0f64], None).unwrap(),
            "01000000 00000000 000000000000f03f",
        );
        assert_writes(
            |w| {
                w.write_u8(1);
                w.write_sequence(&[1u16, 2], Some(2)).unwrap()
            },
            "01 000000 02000000 0100 0200",
        );
        // A fixed array has no length and is aligned once; `&[T; N]` coerces to `&[T]`.
        assert_writes(
            |w| {
                w.write_u8(1);
                w.write_array(&[1u32, 2])
            },
            "01 000000 01000000 02000000",
        );
        assert_writes(
            |w| {
                w.write_u8(3);
                w.write_array(&[-1i8, 2])
            },
            "03 ff 02",
        );
        assert_writes(
            |w| {
                w.write_u8(3);
                w.write_array::<u64>(&[])
            },
            "03",
        );
        assert_writes(|w| w.write_bool_array(&[true, false, true]), "01 00 01");
        assert_writes(
            |w| {
                w.write_u8(5);
                w.write_bool_sequence(&[true, true], None).unwrap()
            },
            "05 000000 02000000 01 01",
        );
        assert_writes(
            |w| {
                w.write_u8(5);
                w.write_len(3, Some(3)).unwrap()
            },
            "05 000000 03000000",
        );
    }

    #[test]
    fn strings_golden() {
        assert_writes(|w| w.write_string("", None).unwrap(), "01000000 00");
        assert_writes(
            |w| {
                w.write_u8(1);
                w.write_string("ab", Some(2)).unwrap()
            },
            "01 000000 03000000 616200",
        );
        // The rclpy-verified Jazzy wstring layout.
        assert_writes(
            |w| w.write_wstring("hé€", None).unwrap(),
            "03000000 68000000 e9000000 ac200000",
        );
        // Outside the BMP: a surrogate pair, two 4-byte units.
        assert_writes(
            |w| w.write_wstring("😀", Some(2)).unwrap(),
            "02000000 3dd80000 00de0000",
        );
        assert_writes(
            |w| {
                w.write_string_sequence(&["a".into(), String::new()], Some(2), Some(1))
                    .unwrap()
            },
            "02000000 02000000 6100 0000 01000000 00",
        );
        assert_writes(
            |w| {
                w.write_string_array(&["x".into(), "yz".into()], None)
                    .unwrap()
            },
            "02000000 7800 0000 03000000 797a00",
        );
        assert_writes(
            |w| w.write_wstring_sequence(&["a".into()], None, None).unwrap(),
            "01000000 01000000 61000000",
        );
        assert_writes(
            |w| {
                w.write_wstring_array(&["".into(), "b".into()], None)
                    .unwrap()
            },
            "00000000 01000000 62000000",
        );
    }

    /// A message that mixes sequences, strings, arrays and an 8-byte value, byte for byte
    /// as rosbags 0.11.9 `serialize_cdr` encodes it (both byte orders; rosbags pads with
    /// zeros): `uint8 a; uint16[] s; bool[] bs; string t; string[] ts; int64 z;
    /// float32[3] f; bool[2] fb; string[2] sa`.
    #[test]
    fn matches_rosbags() {
        const LE: &str =
            "00010000 01 000000 02000000 0100 0200 02000000 01 00 0000 03000000 616200 \
            00 02000000 02000000 6100 0000 01000000 00 000000 feffffffffffffff \
            0000803f 00000040 00004040 01 01 0000 02000000 7800 0000 03000000 797a00";
        const BE: &str =
            "00000000 01 000000 00000002 0001 0002 00000002 01 00 0000 00000003 616200 \
            00 00000002 00000002 6100 0000 00000001 00 000000 fffffffffffffffe \
            3f800000 40000000 40400000 01 01 0000 00000002 7800 0000 00000003 797a00";
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut buf = vec![0x00, 0x01, 0x00, 0x00];
        let mut w = CdrWriter::new(&mut buf);
        w.write_u8(1);
        w.write_sequence(&[1u16, 2], None).unwrap();
        w.write_bool_sequence(&[true, false], None).unwrap();
        w.write_string("ab", None).unwrap();
        w.write_string_sequence(&strings(&["a", ""]), None, None)
            .unwrap();
        w.write_i64(-2);
        w.write_array(&[1.0f32, 2.0, 3.0]);
        w.write_bool_array(&[true, true]);
        w.write_string_array(&strings(&["x", "yz"]), None).unwrap();
        assert_eq!(hex(&buf), golden(LE));

        for bytes in [LE, BE] {
            let bytes: Vec<u8> = (0..golden(bytes).len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&golden(bytes)[i..i + 2], 16).unwrap())
                .collect();
            let mut r = CdrReader::from_encapsulated(&bytes).unwrap();
            assert_eq!(r.read_u8(), Ok(1));
            assert_eq!(r.read_sequence::<u16>(Some(2)), Ok(vec![1, 2]));
            assert_eq!(r.read_bool_sequence(None), Ok(vec![true, false]));
            assert_eq!(r.read_string(Some(2)).as_deref(), Ok("ab"));
            assert_eq!(r.read_string_sequence(None, None), Ok(strings(&["a", ""])));
            assert_eq!(r.read_i64(), Ok(-2));
            assert_eq!(r.read_array::<f32, 3>(), Ok([1.0, 2.0, 3.0]));
            assert_eq!(r.read_bool_array::<2>(), Ok([true, true]));
            assert_eq!(
                r.read_string_array::<2>(None),
                Ok(["x".into(), "yz".into()])
            );
            assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn big_endian_input_decodes() {
        let be: Vec<u8> = [
            &[0x00, 0x00, 0x00, 0x00][..],                     // CDR_BE header
            &[0x01, 0x00, 0x00, 0x00],                         // u8 1, pad
            &[0x00, 0x00, 0x00, 0x07],                         // i32 7
            &[0x40, 0x00, 0, 0, 0, 0, 0, 0],                   // f64 2.0
            &[0x00, 0x00, 0x00, 0x03, b'a', b'b', 0, 0],       // "ab", pad
            &[0x00, 0x00, 0x00, 0x02, 0x00, 0x01, 0x00, 0x02], // u16[] [1, 2]
            &[0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0xe9], // wstring "é"
            &[0xff, 0xfe],                                     // i16 -2
        ]
        .concat();
        let mut r = CdrReader::from_encapsulated(&be).unwrap();
        assert_eq!(r.read_u8(), Ok(1));
        assert_eq!(r.read_i32(), Ok(7));
        assert_eq!(r.read_f64(), Ok(2.0));
        assert_eq!(r.read_string(None).as_deref(), Ok("ab"));
        assert_eq!(r.read_sequence::<u16>(None), Ok(vec![1, 2]));
        assert_eq!(r.read_wstring(None).as_deref(), Ok("é"));
        assert_eq!(r.read_i16(), Ok(-2));
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn encapsulation_header() {
        let err = |b: &[u8]| CdrReader::from_encapsulated(b).unwrap_err();
        assert!(matches!(err(&[0, 1, 0]), CdrError::Encapsulation { .. }));
        for bad in [[0x00, 0x02], [0x00, 0x03], [0x01, 0x00], [0x00, 0x07]] {
            let e = err(&[bad[0], bad[1], 0, 0, 1]);
            let CdrError::Encapsulation { detail } = e else {
                panic!("{e:?}")
            };
            assert!(
                detail.contains(&format!("{:02x} {:02x}", bad[0], bad[1])),
                "{detail}"
            );
        }
        // Options are ignored; trailing bytes are ignored.
        let mut r = CdrReader::from_encapsulated(&[0, 1, 0xff, 3, 5, 0xaa, 0xbb]).unwrap();
        assert_eq!(r.read_u8(), Ok(5));
        let r = CdrReader::from_encapsulated(&[0, 0, 0, 0]).unwrap();
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn string_decoding_is_tolerant_like_rclpy() {
        let mut r = CdrReader::new(&[0, 0, 0, 0, 2, 0, 0, 0, b'a', b'b', 7], false);
        assert_eq!(r.read_string(None).as_deref(), Ok(""));
        assert_eq!(r.read_string(None).as_deref(), Ok("ab"));
        assert_eq!(r.read_u8(), Ok(7));
    }

    /// The error for `len` over `bound`.
    fn bound(what: &'static str, len: usize, bound: usize) -> Option<CdrError> {
        Some(CdrError::BoundExceeded { what, len, bound })
    }

    #[test]
    fn bounds_on_encode() {
        let mut buf = Vec::new();
        let mut w = CdrWriter::new(&mut buf);
        assert_eq!(w.write_string("abc", Some(2)).err(), bound("string", 3, 2));
        assert_eq!(
            w.write_wstring("hé€", Some(2)).err(),
            bound("wstring", 3, 2)
        );
        assert_eq!(w.write_wstring("😀", Some(1)).err(), bound("wstring", 2, 1));
        assert_eq!(
            w.write_sequence(&[1u8, 2], Some(1)).err(),
            bound("sequence", 2, 1)
        );
        assert_eq!(w.write_len(5, Some(4)).err(), bound("sequence", 5, 4));
        assert_eq!(
            w.write_bool_sequence(&[true; 3], Some(2)).err(),
            bound("sequence", 3, 2)
        );
        let strings = vec!["ab".to_string(), "abc".to_string()];
        assert_eq!(
            w.write_string_sequence(&strings, Some(1), None).err(),
            bound("sequence", 2, 1)
        );
        assert_eq!(
            w.write_string_sequence(&strings, None, Some(2)).err(),
            bound("string", 3, 2)
        );
        assert_eq!(
            w.write_string_array(&strings, Some(2)).err(),
            bound("string", 3, 2)
        );
        assert_eq!(
            w.write_wstring_sequence(&strings, Some(1), None).err(),
            bound("sequence", 2, 1)
        );
        assert_eq!(
            w.write_wstring_array(&strings, Some(2)).err(),
            bound("wstring", 3, 2)
        );
        assert_eq!(
            w.write_len(usize::MAX, None),
            Err(CdrError::TooLong { len: usize::MAX })
        );
        // At the bound is fine.
        assert_eq!(w.write_string("ab", Some(2)), Ok(()));
        assert_eq!(w.write_wstring("😀", Some(2)), Ok(()));
        assert_eq!(w.write_sequence(&[1u8, 2], Some(2)), Ok(()));
    }

    #[test]
    fn bounds_on_decode() {
        let body = encode(|w| w.write_string("abc", None).unwrap());
        assert_eq!(
            CdrReader::new(&body, false).read_string(Some(2)).err(),
            bound("string", 3, 2)
        );
        assert_eq!(
            CdrReader::new(&body, false).read_string(Some(3)).as_deref(),
            Ok("abc")
        );
        let body = encode(|w| w.write_wstring("abc", None).unwrap());
        assert_eq!(
            CdrReader::new(&body, false).read_wstring(Some(2)).err(),
            bound("wstring", 3, 2)
        );
        let body = encode(|w| w.write_sequence(&[1u32, 2, 3], None).unwrap());
        assert_eq!(
            CdrReader::new(&body, false)
                .read_sequence::<u32>(Some(2))
                .err(),
            bound("sequence", 3, 2)
        );
        assert_eq!(
            CdrReader::new(&body, false).read_len(Some(2), 4).err(),
            bound("sequence", 3, 2)
        );
        let strings = ["a".to_string(), "bcd".to_string()];
        let body = encode(|w| w.write_string_sequence(&strings, None, None).unwrap());
        let mut r = CdrReader::new(&body, false);
        assert_eq!(
            r.read_string_sequence(Some(1), None).err(),
            bound("sequence", 2, 1)
        );
        let mut r = CdrReader::new(&body, false);
        assert_eq!(
            r.read_string_sequence(None, Some(2)).err(),
            bound("string", 3, 2)
        );
        let body = encode(|w| w.write_wstring_sequence(&strings, None, None).unwrap());
        let mut r = CdrReader::new(&body, false);
        assert_eq!(
            r.read_wstring_sequence(None, Some(2)).err(),
            bound("wstring", 3, 2)
        );
        let body = encode(|w| w.write_bool_sequence(&[true, false], None).unwrap());
        let mut r = CdrReader::new(&body, false);
        assert_eq!(r.read_bool_sequence(Some(1)).err(), bound("sequence", 2, 1));
    }

    /// A length of 0xFFFFFFFF is refused by the length check, before any allocation.
    #[test]
    fn huge_lengths_error_before_allocating() {
        let body = [0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4];
        let truncated = |needed| {
            Err::<(), _>(CdrError::Truncated {
                offset: 4,
                needed,
                remaining: 4,
            })
        };
        let huge = 0xffff_ffff_usize;
        let r = || CdrReader::new(&body, false);
        assert_eq!(r().read_sequence::<u8>(None).map(drop), truncated(huge));
        assert_eq!(
            r().read_sequence::<f64>(None).map(drop),
            truncated(huge * 8)
        );
        assert_eq!(r().read_bool_sequence(None).map(drop), truncated(huge));
        assert_eq!(
            r().read_string_sequence(None, None).map(drop),
            truncated(huge * 4)
        );
        assert_eq!(
            r().read_wstring_sequence(None, None).map(drop),
            truncated(huge * 4)
        );
        assert_eq!(r().read_len(None, 1).map(drop), truncated(huge));
        assert_eq!(r().read_string(None).map(drop), truncated(huge));
        assert_eq!(r().read_wstring(None).map(drop), truncated(huge * 4));
        // min_element_size 0 lets any length through: the caller asked for that.
        assert_eq!(r().read_len(None, 0), Ok(huge));
    }

    #[test]
    fn invalid_text_and_bools() {
        let mut r = CdrReader::new(&[3, 0, 0, 0, b'a', 0xff, 0], false);
        let e = r.read_string(None).unwrap_err();
        assert!(
            matches!(e, CdrError::InvalidText { offset: 5, .. }),
            "{e:?}"
        );
        let body = [&1u32.to_le_bytes()[..], &0x11_0000u32.to_le_bytes()].concat();
        let e = CdrReader::new(&body, false).read_wstring(None).unwrap_err();
        assert!(
            matches!(e, CdrError::InvalidText { offset: 4, .. }),
            "{e:?}"
        );
        let body = [&1u32.to_le_bytes()[..], &0xd800u32.to_le_bytes()].concat();
        let e = CdrReader::new(&body, false).read_wstring(None).unwrap_err();
        assert!(
            matches!(e, CdrError::InvalidText { offset: 4, .. }),
            "{e:?}"
        );

        let invalid = |offset, value| CdrError::InvalidBool { offset, value };
        assert_eq!(CdrReader::new(&[2], false).read_bool(), Err(invalid(0, 2)));
        assert_eq!(
            CdrReader::new(&[1, 0, 0xff], false).read_bool_array::<3>(),
            Err(invalid(2, 0xff))
        );
        assert_eq!(
            CdrReader::new(&[2, 0, 0, 0, 1, 2], false).read_bool_sequence(None),
            Err(invalid(5, 2))
        );
        assert_eq!(
            CdrReader::new(&[2, 0, 0, 0, 1, 0], false).read_bool_sequence(None),
            Ok(vec![true, false])
        );
    }

    #[test]
    fn typed_errors_display() {
        let e = CdrError::Truncated {
            offset: 4,
            needed: 8,
            remaining: 2,
        };
        assert_eq!(
            e.to_string(),
            "CDR input truncated: needed 8 bytes at body offset 4, 2 left"
        );
    }

    // ---- Round trips against an independent model encoder, both byte orders ----

    /// One call of the writer/reader API, with its value. Floats are kept as bits so that
    /// NaNs compare equal.
    #[derive(Debug, Clone, PartialEq)]
    enum Item {
        Bool(bool),
        U8(u8),
        I8(i8),
        U16(u16),
        I16(i16),
        U32(u32),
        I32(i32),
        U64(u64),
        I64(i64),
        F32(u32),
        F64(u64),
        Str(String, bool),
        WStr(String, bool),
        SeqU8(Vec<u8>),
        SeqI16(Vec<i16>),
        SeqU32(Vec<u32>),
        SeqF32(Vec<u32>),
        SeqI64(Vec<i64>),
        SeqF64(Vec<u64>),
        ArrI8([i8; 3]),
        ArrU16([u16; 3]),
        ArrF64([u64; 2]),
        BoolArr([bool; 3]),
        BoolSeq(Vec<bool>),
        StrArr([String; 2]),
        StrSeq(Vec<String>),
        WStrArr([String; 2]),
        WStrSeq(Vec<String>),
    }

    fn f32s(bits: &[u32]) -> Vec<f32> {
        bits.iter().map(|&b| f32::from_bits(b)).collect()
    }
    fn f64s(bits: &[u64]) -> Vec<f64> {
        bits.iter().map(|&b| f64::from_bits(b)).collect()
    }
    /// The exact bound, when asked to test bounds: it must pass.
    fn exact(on: bool, len: usize) -> Option<usize> {
        on.then_some(len)
    }

    fn write_items(items: &[Item]) -> Vec<u8> {
        let mut buf = vec![0x00, 0x01, 0x00, 0x00];
        put_items(&mut CdrWriter::new(&mut buf), items);
        buf
    }

    /// The length a counting writer finds for `items`, header included.
    fn count_items(items: &[Item]) -> usize {
        let mut w = CdrWriter::counting(4);
        w.write_raw(&[0x00, 0x01, 0x00, 0x00]);
        put_items(&mut w, items);
        w.finish_in_slice().unwrap()
    }

    fn put_items(w: &mut CdrWriter<'_>, items: &[Item]) {
        for item in items {
            match item {
                Item::Bool(v) => w.write_bool(*v),
                Item::U8(v) => w.write_u8(*v),
                Item::I8(v) => w.write_i8(*v),
                Item::U16(v) => w.write_u16(*v),
                Item::I16(v) => w.write_i16(*v),
                Item::U32(v) => w.write_u32(*v),
                Item::I32(v) => w.write_i32(*v),
                Item::U64(v) => w.write_u64(*v),
                Item::I64(v) => w.write_i64(*v),
                Item::F32(v) => w.write_f32(f32::from_bits(*v)),
                Item::F64(v) => w.write_f64(f64::from_bits(*v)),
                Item::Str(s, b) => w.write_string(s, exact(*b, s.len())).unwrap(),
                Item::WStr(s, b) => w
                    .write_wstring(s, exact(*b, s.encode_utf16().count()))
                    .unwrap(),
                Item::SeqU8(v) => w.write_sequence(v, exact(true, v.len())).unwrap(),
                Item::SeqI16(v) => w.write_sequence(v, None).unwrap(),
                Item::SeqU32(v) => w.write_sequence(v, None).unwrap(),
                Item::SeqF32(v) => w.write_sequence(&f32s(v), None).unwrap(),
                Item::SeqI64(v) => w.write_sequence(v, None).unwrap(),
                Item::SeqF64(v) => w.write_sequence(&f64s(v), Some(64)).unwrap(),
                Item::ArrI8(v) => w.write_array(v),
                Item::ArrU16(v) => w.write_array(v),
                Item::ArrF64(v) => w.write_array(&f64s(v)),
                Item::BoolArr(v) => w.write_bool_array(v),
                Item::BoolSeq(v) => w.write_bool_sequence(v, None).unwrap(),
                Item::StrArr(v) => w.write_string_array(v, None).unwrap(),
                Item::StrSeq(v) => w.write_string_sequence(v, Some(8), None).unwrap(),
                Item::WStrArr(v) => w.write_wstring_array(v, None).unwrap(),
                Item::WStrSeq(v) => w.write_wstring_sequence(v, None, Some(64)).unwrap(),
            }
        }
    }

    fn read_items(bytes: &[u8], like: &[Item]) -> Result<Vec<Item>, CdrError> {
        let mut r = CdrReader::from_encapsulated(bytes)?;
        let bits32 = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect();
        let bits64 = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
        like.iter()
            .map(|item| {
                Ok(match item {
                    Item::Bool(_) => Item::Bool(r.read_bool()?),
                    Item::U8(_) => Item::U8(r.read_u8()?),
                    Item::I8(_) => Item::I8(r.read_i8()?),
                    Item::U16(_) => Item::U16(r.read_u16()?),
                    Item::I16(_) => Item::I16(r.read_i16()?),
                    Item::U32(_) => Item::U32(r.read_u32()?),
                    Item::I32(_) => Item::I32(r.read_i32()?),
                    Item::U64(_) => Item::U64(r.read_u64()?),
                    Item::I64(_) => Item::I64(r.read_i64()?),
                    Item::F32(_) => Item::F32(r.read_f32()?.to_bits()),
                    Item::F64(_) => Item::F64(r.read::<f64>()?.to_bits()),
                    Item::Str(s, b) => Item::Str(r.read_string(exact(*b, s.len()))?, *b),
                    Item::WStr(s, b) => {
                        Item::WStr(r.read_wstring(exact(*b, s.encode_utf16().count()))?, *b)
                    }
                    Item::SeqU8(v) => Item::SeqU8(r.read_sequence(exact(true, v.len()))?),
                    Item::SeqI16(_) => Item::SeqI16(r.read_sequence(None)?),
                    Item::SeqU32(_) => Item::SeqU32(r.read_sequence(None)?),
                    Item::SeqF32(_) => Item::SeqF32(bits32(r.read_sequence(None)?)),
                    Item::SeqI64(_) => Item::SeqI64(r.read_sequence(None)?),
                    Item::SeqF64(_) => Item::SeqF64(bits64(r.read_sequence(Some(64))?)),
                    Item::ArrI8(_) => Item::ArrI8(r.read_array()?),
                    Item::ArrU16(_) => Item::ArrU16(r.read_array()?),
                    Item::ArrF64(_) => {
                        let a: [f64; 2] = r.read_array()?;
                        Item::ArrF64(bits64(a.to_vec()).try_into().unwrap())
                    }
                    Item::BoolArr(_) => Item::BoolArr(r.read_bool_array()?),
                    Item::BoolSeq(_) => Item::BoolSeq(r.read_bool_sequence(None)?),
                    Item::StrArr(_) => Item::StrArr(r.read_string_array(None)?),
                    Item::StrSeq(_) => Item::StrSeq(r.read_string_sequence(Some(8), None)?),
                    Item::WStrArr(_) => Item::WStrArr(r.read_wstring_array(None)?),
                    Item::WStrSeq(_) => Item::WStrSeq(r.read_wstring_sequence(None, Some(64))?),
                })
            })
            .collect()
    }

    /// A second, deliberately naive encoder: `to_le_bytes` per value, reversed for
    /// big-endian, padding from an explicit body offset.
    struct Model {
        out: Vec<u8>,
        be: bool,
    }

    impl Model {
        fn pad(&mut self, align: usize) {
            while !(self.out.len() - 4).is_multiple_of(align) {
                self.out.push(0);
            }
        }
        fn put<const N: usize>(&mut self, mut le: [u8; N]) {
            self.pad(N);
            if self.be {
                le.reverse();
            }
            self.out.extend_from_slice(&le);
        }
        fn len(&mut self, n: usize) {
            self.put((n as u32).to_le_bytes());
        }
        fn string(&mut self, s: &str) {
            self.len(s.len() + 1);
            self.out.extend_from_slice(s.as_bytes());
            self.out.push(0);
        }
        fn wstring(&mut self, s: &str) {
            self.len(s.encode_utf16().count());
            s.encode_utf16()
                .for_each(|u| self.put(u32::from(u).to_le_bytes()));
        }
    }

    fn model(items: &[Item], be: bool) -> Vec<u8> {
        let mut m = Model {
            out: vec![0x00, u8::from(!be), 0x00, 0x00],
            be,
        };
        for item in items {
            match item {
                Item::Bool(v) => m.put([u8::from(*v)]),
                Item::U8(v) => m.put(v.to_le_bytes()),
                Item::I8(v) => m.put(v.to_le_bytes()),
                Item::U16(v) => m.put(v.to_le_bytes()),
                Item::I16(v) => m.put(v.to_le_bytes()),
                Item::U32(v) | Item::F32(v) => m.put(v.to_le_bytes()),
                Item::I32(v) => m.put(v.to_le_bytes()),
                Item::U64(v) | Item::F64(v) => m.put(v.to_le_bytes()),
                Item::I64(v) => m.put(v.to_le_bytes()),
                Item::Str(s, _) => m.string(s),
                Item::WStr(s, _) => m.wstring(s),
                Item::SeqU8(v) => {
                    m.len(v.len());
                    v.iter().for_each(|x| m.put(x.to_le_bytes()));
                }
                Item::SeqI16(v) => {
                    m.len(v.len());
                    v.iter().for_each(|x| m.put(x.to_le_bytes()));
                }
                Item::SeqU32(v) | Item::SeqF32(v) => {
                    m.len(v.len());
                    v.iter().for_each(|x| m.put(x.to_le_bytes()));
                }
                Item::SeqI64(v) => {
                    m.len(v.len());
                    v.iter().for_each(|x| m.put(x.to_le_bytes()));
                }
                Item::SeqF64(v) => {
                    m.len(v.len());
                    v.iter().for_each(|x| m.put(x.to_le_bytes()));
                }
                Item::ArrI8(v) => v.iter().for_each(|x| m.put(x.to_le_bytes())),
                Item::ArrU16(v) => v.iter().for_each(|x| m.put(x.to_le_bytes())),
                Item::ArrF64(v) => v.iter().for_each(|x| m.put(x.to_le_bytes())),
                Item::BoolArr(v) => v.iter().for_each(|x| m.put([u8::from(*x)])),
                Item::BoolSeq(v) => {
                    m.len(v.len());
                    v.iter().for_each(|x| m.put([u8::from(*x)]));
                }
                Item::StrArr(v) => v.iter().for_each(|s| m.string(s)),
                Item::StrSeq(v) => {
                    m.len(v.len());
                    v.iter().for_each(|s| m.string(s));
                }
                Item::WStrArr(v) => v.iter().for_each(|s| m.wstring(s)),
                Item::WStrSeq(v) => {
                    m.len(v.len());
                    v.iter().for_each(|s| m.wstring(s));
                }
            }
        }
        m.out
    }

    fn any_item() -> impl Strategy<Value = Item> {
        let s = || any::<String>();
        let v = |len| proptest::collection::vec(any::<u64>(), 0..len);
        prop_oneof![
            any::<bool>().prop_map(Item::Bool),
            any::<u8>().prop_map(Item::U8),
            any::<i8>().prop_map(Item::I8),
            any::<u16>().prop_map(Item::U16),
            any::<i16>().prop_map(Item::I16),
            any::<u32>().prop_map(Item::U32),
            any::<i32>().prop_map(Item::I32),
            any::<u64>().prop_map(Item::U64),
            any::<i64>().prop_map(Item::I64),
            any::<u32>().prop_map(Item::F32),
            any::<u64>().prop_map(Item::F64),
            (s(), any::<bool>()).prop_map(|(s, b)| Item::Str(s, b)),
            (s(), any::<bool>()).prop_map(|(s, b)| Item::WStr(s, b)),
            proptest::collection::vec(any::<u8>(), 0..20).prop_map(Item::SeqU8),
            proptest::collection::vec(any::<i16>(), 0..9).prop_map(Item::SeqI16),
            proptest::collection::vec(any::<u32>(), 0..9).prop_map(Item::SeqU32),
            proptest::collection::vec(any::<u32>(), 0..9).prop_map(Item::SeqF32),
            proptest::collection::vec(any::<i64>(), 0..9).prop_map(Item::SeqI64),
            v(9).prop_map(Item::SeqF64),
            any::<[i8; 3]>().prop_map(Item::ArrI8),
            any::<[u16; 3]>().prop_map(Item::ArrU16),
            any::<[u64; 2]>().prop_map(Item::ArrF64),
            any::<[bool; 3]>().prop_map(Item::BoolArr),
            proptest::collection::vec(any::<bool>(), 0..9).prop_map(Item::BoolSeq),
            (s(), s()).prop_map(|(a, b)| Item::StrArr([a, b])),
            proptest::collection::vec(s(), 0..4).prop_map(Item::StrSeq),
            (s(), s()).prop_map(|(a, b)| Item::WStrArr([a, b])),
            proptest::collection::vec(s(), 0..4).prop_map(Item::WStrSeq),
        ]
    }

    proptest! {
        /// The writer matches the model byte for byte (little-endian), the reader decodes the
        /// model's output in both byte orders, trailing bytes are ignored, and every strict
        /// prefix is `Truncated`.
        #[test]
        fn round_trip(items in proptest::collection::vec(any_item(), 1..12)) {
            let written = write_items(&items);
            prop_assert_eq!(hex(&written), hex(&model(&items, false)));
            // A counting writer finds the length the encoding takes.
            prop_assert_eq!(count_items(&items), written.len());
            for be in [false, true] {
                let mut bytes = model(&items, be);
                prop_assert_eq!(read_items(&bytes, &items), Ok(items.clone()));
                for cut in 4..bytes.len() {
                    let r = read_items(&bytes[..cut], &items);
                    prop_assert!(matches!(r, Err(CdrError::Truncated { .. })), "cut {}: {:?}", cut, r);
                }
                bytes.extend_from_slice(&[0xde, 0xad]);
                prop_assert_eq!(read_items(&bytes, &items), Ok(items.clone()));
            }
        }

        /// Arbitrary bytes never panic, whatever is read from them.
        #[test]
        fn garbage_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            shape in proptest::collection::vec(any_item(), 1..8),
        ) {
            let mut input = vec![0x00, 0x01, 0x00, 0x00];
            input.extend_from_slice(&bytes);
            let _ = read_items(&input, &shape);
            input[1] = 0;
            let _ = read_items(&input, &shape);
        }
    }

    /// Every strict prefix of a buffer that exercises every method fails, in a fixed case
    /// (the proptest does the same on random ones).
    #[test]
    fn every_truncation_is_an_error() {
        let items = vec![
            Item::U8(1),
            Item::F64(2.0f64.to_bits()),
            Item::Str("héllo".into(), true),
            Item::WStr("h€😀".into(), false),
            Item::SeqF64(vec![]),
            Item::I16(-3),
            Item::SeqF64(vec![1.5f64.to_bits()]),
            Item::BoolSeq(vec![true, false]),
            Item::ArrU16([1, 2, 3]),
            Item::StrSeq(vec![String::new(), "x".into()]),
            Item::WStrArr(["a".into(), String::new()]),
            Item::BoolArr([true, true, false]),
            Item::I64(-9),
        ];
        for be in [false, true] {
            let bytes = model(&items, be);
            assert_eq!(read_items(&bytes, &items), Ok(items.clone()));
            for cut in 0..bytes.len() {
                assert!(read_items(&bytes[..cut], &items).is_err(), "cut {cut}");
            }
        }
        assert_eq!(hex(&write_items(&items)), hex(&model(&items, false)));
        assert_eq!(count_items(&items), model(&items, false).len());
    }
}
