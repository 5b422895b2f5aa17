//! Ring-buffer pages as `per_cpu/cpuN/trace_pipe_raw` hands them out: the
//! page header, then compressed records, each with a 27-bit time delta.
//!
//! Timestamps are rebuilt exactly as the kernel's own reader does
//! (`rb_update_read_stamp` in `kernel/trace/ring_buffer.c`): start from the
//! page's timestamp, add each data record's delta, add a time extend's full
//! delta, replace the running time with an absolute timestamp (whose five
//! high bits come from the running time), and ignore padding's delta — a
//! discarded record's delta does not move the clock. (libtraceevent's
//! kbuffer adds it; on a page it only ever precedes the page's end or a
//! record stamped anew.)
//!
//! A page whose `commit` word carries the missed-events flag follows a gap:
//! events were overwritten or dropped before it, and their number is stored
//! after the data when there was room. That is reported, never skipped.

use std::fmt;

use super::format::{PageLayout, RecordHeader};

/// `commit` flag: events were lost between the previous page read and this one.
const MISSED_EVENTS: u64 = 1 << 31;
/// `commit` flag: their count is stored (as a `long`) right after the data.
const MISSED_STORED: u64 = 1 << 30;
/// The bytes of data are the bits of `commit` below the flags.
const COMMIT_SIZE_MASK: u64 = MISSED_STORED - 1;
/// An absolute timestamp holds 59 bits; the five above come from the running time.
const TS_MSB: u64 = 0xf8 << 56;
/// A time delta's width: array[0] of a time extend holds the bits above it.
const DELTA_BITS: u32 = 27;

/// Events the kernel lost before a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missed {
    /// None: this page follows the previous one directly.
    None,
    /// This many, overwritten or dropped before this page.
    Count(u64),
    /// Some, but the page had no room to store how many.
    Unknown,
}

/// A page that does not decode: where, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageError {
    /// Byte offset in the page.
    pub offset: usize,
    /// What is wrong there.
    pub what: &'static str,
}

impl fmt::Display for PageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed ring-buffer page at byte {}: {}", self.offset, self.what)
    }
}

/// One data record: its timestamp (trace-clock nanoseconds) and payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// Trace-clock nanoseconds (CLOCK_MONOTONIC with the `mono` clock).
    pub ts: u64,
    /// The event record: common fields first, then the event's own. It may
    /// end with up to three bytes of alignment padding.
    pub payload: &'a [u8],
}

impl RawRecord<'_> {
    /// The event type id: `common_type`, the first field of every event
    /// record (offset 0, 2 bytes, in every format file).
    pub fn id(&self) -> Option<u16> {
        Some(u16::from_ne_bytes(self.payload.get(..2)?.try_into().ok()?))
    }
}

/// One page read from `trace_pipe_raw`.
#[derive(Clone, Copy, Debug)]
pub struct Page<'a> {
    /// The timestamp the first record's delta counts from.
    pub timestamp: u64,
    /// Events lost before this page.
    pub missed: Missed,
    header: RecordHeader,
    data: &'a [u8],
}

impl<'a> Page<'a> {
    /// Reads the page header of `bytes` (one page as `trace_pipe_raw` gives it).
    pub fn parse(layout: &PageLayout, header: &RecordHeader, bytes: &'a [u8]) -> Result<Page<'a>, PageError> {
        let err = |offset, what| Err(PageError { offset, what });
        let Some(timestamp) = layout.timestamp.u64(bytes) else { return err(0, "shorter than its header") };
        let Some(commit) = layout.commit.u64(bytes) else { return err(0, "shorter than its header") };
        let size = (commit & COMMIT_SIZE_MASK) as usize;
        let start = layout.data_offset;
        let Some(data) = bytes.get(start..start + size) else { return err(start, "commit is beyond the page") };
        let missed = if commit & MISSED_EVENTS == 0 {
            Missed::None
        } else if commit & MISSED_STORED == 0 {
            Missed::Unknown
        } else {
            // The count is a `long`, as wide as the commit word.
            let count = super::format::Field { offset: 0, ..layout.commit };
            match bytes.get(start + size..).and_then(|rest| count.u64(rest)) {
                Some(n) => Missed::Count(n),
                None => return err(start + size, "missed-events count beyond the page"),
            }
        };
        Ok(Page { timestamp, missed, header: *header, data })
    }

    /// The data records, in order, with their timestamps.
    pub fn records(&self) -> Records<'a> {
        Records { header: self.header, data: self.data, pos: 0, ts: self.timestamp, offset: 0, failed: false }
    }
}

/// Iterator over a page's data records.
#[derive(Debug)]
pub struct Records<'a> {
    header: RecordHeader,
    data: &'a [u8],
    pos: usize,
    ts: u64,
    /// Offset of the data in the page, for error messages.
    offset: usize,
    failed: bool,
}

impl<'a> Records<'a> {
    fn u32_at(&self, pos: usize) -> Option<u32> {
        Some(u32::from_ne_bytes(self.data.get(pos..pos + 4)?.try_into().ok()?))
    }

    fn fail(&mut self, what: &'static str) -> Option<Result<RawRecord<'a>, PageError>> {
        self.failed = true;
        Some(Err(PageError { offset: self.offset + self.pos, what }))
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<RawRecord<'a>, PageError>;

    fn next(&mut self) -> Option<Self::Item> {
        let h = self.header;
        while !self.failed && self.pos < self.data.len() {
            let Some(word) = self.u32_at(self.pos) else { return self.fail("truncated record header") };
            let (type_len, delta) = (word & 0x1f, u64::from(word >> 5));
            // array[0]: the length, or the high bits of a time.
            let array0 = self.u32_at(self.pos + 4).map(u64::from);
            if type_len == h.padding {
                if delta == 0 {
                    // Null padding: nothing follows on this page.
                    self.pos = self.data.len();
                    return None;
                }
                let Some(len) = array0 else { return self.fail("truncated padding") };
                self.pos += 4 + len as usize;
                continue;
            }
            if type_len == h.time_extend || type_len == h.time_stamp {
                let Some(high) = array0 else { return self.fail("truncated time record") };
                let t = (high << DELTA_BITS) + delta;
                self.ts = if type_len == h.time_extend { self.ts.wrapping_add(t) } else { fix_abs_ts(t, self.ts) };
                self.pos += 8;
                continue;
            }
            if type_len > h.data_max {
                return self.fail("unknown record type");
            }
            let (start, len) = if type_len == 0 {
                // The length is in array[0], which counts itself.
                match array0 {
                    Some(n) if n >= 4 => (self.pos + 8, n as usize - 4),
                    _ => return self.fail("record length below 4"),
                }
            } else {
                (self.pos + 4, 4 * type_len as usize)
            };
            let Some(payload) = self.data.get(start..start + len) else { return self.fail("record beyond the commit") };
            self.pos = start + len;
            self.ts = self.ts.wrapping_add(delta);
            return Some(Ok(RawRecord { ts: self.ts, payload }));
        }
        None
    }
}

/// An absolute timestamp with the running time's five high bits, as
/// `rb_fix_abs_ts` rebuilds it.
fn fix_abs_ts(abs: u64, running: u64) -> u64 {
    if running & TS_MSB == 0 {
        return abs;
    }
    let t = abs | (running & TS_MSB);
    if t < running {
        t.wrapping_add(1 << 59)
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ktrace::format::{Field, Layout};

    fn layout() -> (PageLayout, RecordHeader) {
        let scalar = |offset, size| Field { offset, size, signed: false, layout: Layout::Scalar };
        (
            PageLayout { timestamp: scalar(0, 8), commit: scalar(8, 8), data_offset: 16, page_size: 4096 },
            RecordHeader { padding: 29, time_extend: 30, time_stamp: 31, data_max: 28 },
        )
    }

    /// A page builder: records are appended as the kernel writes them.
    struct Builder(Vec<u8>);
    impl Builder {
        fn new(ts: u64) -> Builder {
            let mut b = ts.to_ne_bytes().to_vec();
            b.extend_from_slice(&[0; 8]);
            Builder(b)
        }
        fn word(&mut self, type_len: u32, delta: u32) -> &mut Self {
            self.0.extend_from_slice(&(type_len | delta << 5).to_ne_bytes());
            self
        }
        fn u32(&mut self, v: u32) -> &mut Self {
            self.0.extend_from_slice(&v.to_ne_bytes());
            self
        }
        fn payload(&mut self, id: u16, len: usize) -> &mut Self {
            let mut p = vec![0xab; len];
            p[..2].copy_from_slice(&id.to_ne_bytes());
            self.0.extend_from_slice(&p);
            self
        }
        fn finish(&mut self, flags: u64, missed: Option<u64>) -> Vec<u8> {
            let size = (self.0.len() - 16) as u64;
            self.0[8..16].copy_from_slice(&(size | flags).to_ne_bytes());
            if let Some(n) = missed {
                self.0.extend_from_slice(&n.to_ne_bytes());
            }
            self.0.resize(4096, 0);
            self.0.clone()
        }
    }

    fn decode(bytes: &[u8]) -> (Missed, Vec<(u64, u16, usize)>) {
        let (l, h) = layout();
        let page = Page::parse(&l, &h, bytes).unwrap();
        let recs =
            page.records().map(|r| r.map(|r| (r.ts, r.id().unwrap(), r.payload.len()))).collect::<Result<_, _>>();
        (page.missed, recs.unwrap())
    }

    #[test]
    fn deltas_extends_and_absolute_stamps_accumulate_as_the_kernel_does() {
        let bytes = Builder::new(1_000)
            .word(3, 5) // data, 12 bytes, +5
            .payload(7, 12)
            .word(30, 3) // time extend: +(2 << 27) + 3
            .u32(2)
            .word(2, 0) // data at the extended time
            .payload(8, 8)
            .word(29, 9) // discarded record (12 bytes after its header): its delta does not count
            .u32(12)
            .payload(0, 8)
            .word(0, 4) // long record: length 120 + 4 in array[0], +4
            .u32(124)
            .payload(9, 120)
            .word(31, 77) // absolute time stamp
            .u32(1)
            .word(1, 0)
            .payload(10, 4)
            .finish(0, None);
        let (missed, recs) = decode(&bytes);
        assert_eq!(missed, Missed::None);
        let t1 = 1_005;
        let t2 = t1 + (2 << 27) + 3;
        assert_eq!(recs, vec![(t1, 7, 12), (t2, 8, 8), (t2 + 4, 9, 120), ((1 << 27) + 77, 10, 4)]);
    }

    #[test]
    fn null_padding_ends_the_page() {
        let bytes =
            Builder::new(0).word(1, 1).payload(1, 4).word(29, 0).u32(0).word(1, 1).payload(2, 4).finish(0, None);
        assert_eq!(decode(&bytes).1, vec![(1, 1, 4)]);
    }

    #[test]
    fn missed_events_are_reported_with_their_count_or_as_unknown() {
        let b = || {
            let mut b = Builder::new(10);
            b.word(1, 1).payload(1, 4);
            b
        };
        assert_eq!(decode(&b().finish(MISSED_EVENTS | MISSED_STORED, Some(42))).0, Missed::Count(42));
        assert_eq!(decode(&b().finish(MISSED_EVENTS, None)).0, Missed::Unknown);
    }

    #[test]
    fn malformed_pages_are_errors_not_panics() {
        let (l, h) = layout();
        assert!(Page::parse(&l, &h, &[0; 10]).is_err());
        let mut big = Builder::new(0).finish(0, None);
        big[8..16].copy_from_slice(&5000u64.to_ne_bytes());
        assert_eq!(Page::parse(&l, &h, &big).unwrap_err().what, "commit is beyond the page");
        // A record running past the commit.
        let mut b = Builder::new(0);
        b.word(3, 1).payload(1, 4);
        let bytes = b.finish(0, None);
        let page = Page::parse(&l, &h, &bytes).unwrap();
        let r: Vec<_> = page.records().collect();
        assert_eq!(r, vec![Err(PageError { offset: 0, what: "record beyond the commit" })]);
        // A long record whose length cannot hold itself.
        let bytes = Builder::new(0).word(0, 1).u32(2).finish(0, None);
        assert!(Page::parse(&l, &h, &bytes).unwrap().records().next().unwrap().is_err());
    }

    #[test]
    fn absolute_stamps_take_the_high_bits_of_the_running_time() {
        assert_eq!(fix_abs_ts(5, 100), 5);
        let high = 0x08 << 56;
        assert_eq!(fix_abs_ts(500, high + 100), high + 500);
        assert_eq!(fix_abs_ts(50, high + 100), high + 50 + (1 << 59), "wrapped");
    }
}
