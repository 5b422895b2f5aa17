//! The layout of kernel trace records, as tracefs describes it: each event's
//! `format` file (its id and fields), `header_page` (the ring-buffer page
//! header) and `header_event` (the compressed record header).
//!
//! Everything is parsed once, when a session starts (or a fixture is
//! loaded). Each field a decoder needs is resolved here to a [`Field`] — an
//! offset, a size and a layout — so decoding a record never looks a name up.
//! The `format` files are parsed by `tracepoint_decode` (Microsoft's
//! tracepoint decoder, which knows every field form the kernel writes:
//! `__data_loc`, `__rel_loc`, fixed and open arrays, the size of `long`);
//! the two header files are not event formats and are read here.

use std::path::Path;

use tracepoint_decode::{PerfEventFormat, PerfFieldArray, PerfFieldFormat};

use super::Error;

/// Whether `long` (and `local_t`, and pointers) are 8 bytes in the records:
/// the kernel we trace is the one we run on.
const LONG_IS_64: bool = cfg!(target_pointer_width = "64");

/// Where a field's bytes are in a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// A scalar of `size` bytes at `offset`.
    Scalar,
    /// A fixed-size array (`char comm[16]`): `size` bytes at `offset`.
    Array,
    /// `__data_loc`: at `offset`, a u32 `(length << 16) | start` (or a u16
    /// start, the length then found by the terminating NUL); `start` counts
    /// from the beginning of the record.
    DataLoc,
    /// `__rel_loc`: as `DataLoc`, with `start` counted from the end of the field.
    RelLoc,
    /// `type name[]` of size 0: everything from `offset` to the end of the record.
    Rest,
}

/// One field of an event record, resolved from its format file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Byte offset in the record.
    pub offset: u16,
    /// Size in bytes at `offset` (for `__data_loc`, the size of the locator).
    pub size: u16,
    /// Whether the kernel declares it signed.
    pub signed: bool,
    /// Scalar, array, or located elsewhere in the record.
    pub layout: Layout,
}

impl Field {
    fn span<'a>(&self, rec: &'a [u8]) -> Option<&'a [u8]> {
        let start = usize::from(self.offset);
        rec.get(start..start + usize::from(self.size))
    }

    /// The field as an unsigned integer: scalars of 1, 2, 4 or 8 bytes,
    /// zero-extended whatever their sign. `None` when the record is too
    /// short or the field is not such a scalar.
    pub fn u64(&self, rec: &[u8]) -> Option<u64> {
        if self.layout != Layout::Scalar {
            return None;
        }
        let b = self.span(rec)?;
        Some(match b.len() {
            1 => u64::from(b[0]),
            2 => u64::from(u16::from_ne_bytes(b.try_into().ok()?)),
            4 => u64::from(u32::from_ne_bytes(b.try_into().ok()?)),
            8 => u64::from_ne_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }

    /// The field as a signed integer: sign-extended when the kernel declares
    /// it signed, zero-extended otherwise.
    pub fn i64(&self, rec: &[u8]) -> Option<i64> {
        let v = self.u64(rec)?;
        let bits = 8 * u32::from(self.size);
        if self.signed && bits < 64 {
            let shift = 64 - bits;
            Some(((v << shift) as i64) >> shift)
        } else {
            Some(v as i64)
        }
    }

    /// The field's bytes: the array, the located data, or the rest of the record.
    pub fn bytes<'a>(&self, rec: &'a [u8]) -> Option<&'a [u8]> {
        match self.layout {
            Layout::Scalar | Layout::Array => self.span(rec),
            Layout::Rest => rec.get(usize::from(self.offset)..),
            Layout::DataLoc | Layout::RelLoc => {
                let base = if self.layout == Layout::RelLoc { usize::from(self.offset + self.size) } else { 0 };
                let loc = self.span(rec)?;
                match loc.len() {
                    4 => {
                        let v = u32::from_ne_bytes(loc.try_into().ok()?);
                        let start = base + (v & 0xffff) as usize;
                        rec.get(start..start + (v >> 16) as usize)
                    }
                    2 => rec.get(base + usize::from(u16::from_ne_bytes(loc.try_into().ok()?))..).map(until_nul),
                    _ => None,
                }
            }
        }
    }

    /// The field as a C string: its bytes up to the first NUL.
    pub fn c_str<'a>(&self, rec: &'a [u8]) -> Option<&'a [u8]> {
        self.bytes(rec).map(until_nul)
    }
}

fn until_nul(b: &[u8]) -> &[u8] {
    b.iter().position(|&c| c == 0).map_or(b, |n| &b[..n])
}

impl Field {
    fn from_perf(f: &PerfFieldFormat) -> Field {
        let layout = match f.array() {
            PerfFieldArray::None => Layout::Scalar,
            PerfFieldArray::Fixed => Layout::Array,
            PerfFieldArray::RestOfEvent => Layout::Rest,
            PerfFieldArray::DataLoc2 | PerfFieldArray::DataLoc4 => Layout::DataLoc,
            PerfFieldArray::RelLoc2 | PerfFieldArray::RelLoc4 => Layout::RelLoc,
        };
        Field { offset: f.offset(), size: f.size(), signed: f.signed().unwrap_or(false), layout }
    }
}

/// An event's `format` file: its id and its fields by name.
#[derive(Debug, Clone)]
pub struct EventFormat {
    system: String,
    name: String,
    id: u16,
    fields: Vec<(String, Field)>,
}

impl EventFormat {
    /// Parses the text of `events/<system>/<name>/format`.
    pub fn parse(system: &str, text: &str) -> Result<EventFormat, String> {
        let f = PerfEventFormat::parse(LONG_IS_64, system, text).ok_or("no `name:` or `ID:` line")?;
        let id = u16::try_from(f.id()).map_err(|_| format!("ID {} does not fit the records' u16 type", f.id()))?;
        let fields = f.fields().iter().map(|p| (p.name().to_string(), Field::from_perf(p))).collect();
        Ok(EventFormat { system: system.to_string(), name: f.name().to_string(), id, fields })
    }

    /// Reads and parses `<events>/<system>/<name>/format`.
    pub fn load(events: &Path, system: &str, name: &str) -> Result<EventFormat, Error> {
        let path = events.join(system).join(name).join("format");
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        EventFormat::parse(system, &text).map_err(|what| Error::Format { path, what })
    }

    /// The event's type id, the `common_type` of its records.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// `system:name`, as `set_event` spells it.
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.system, self.name)
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<Field> {
        self.fields.iter().find(|(n, _)| n == name).map(|&(_, f)| f)
    }

    /// The fields in record order, common ones first.
    pub fn fields(&self) -> impl Iterator<Item = (&str, Field)> {
        self.fields.iter().map(|(n, f)| (n.as_str(), *f))
    }
}

/// The ring-buffer page header (`events/header_page`): a u64 timestamp, the
/// `commit` word (bytes of data, and the missed-events flags in its high
/// bits), then the records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    /// The page's base timestamp.
    pub timestamp: Field,
    /// The commit word (`local_t`: the size of `long`).
    pub commit: Field,
    /// Where the records start.
    pub data_offset: usize,
    /// The size of a whole page (sub-buffer) as `trace_pipe_raw` hands it out.
    pub page_size: usize,
}

impl PageLayout {
    /// Parses the text of `events/header_page`.
    pub fn parse(text: &str) -> Result<PageLayout, String> {
        let mut timestamp = None;
        let mut commit = None;
        let mut data = None;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let f = PerfFieldFormat::parse(LONG_IS_64, line).ok_or_else(|| format!("unreadable line {line:?}"))?;
            match f.name() {
                "timestamp" => timestamp = Some(Field::from_perf(&f)),
                "commit" => commit = Some(Field::from_perf(&f)),
                "data" => data = Some(Field::from_perf(&f)),
                _ => {} // `overwrite` shares the commit word: read through `commit`.
            }
        }
        let (timestamp, commit, data) = match (timestamp, commit, data) {
            (Some(t), Some(c), Some(d)) => (t, c, d),
            _ => return Err("needs the fields timestamp, commit and data".into()),
        };
        if timestamp.size != 8 || !matches!(commit.size, 4 | 8) {
            return Err(format!(
                "timestamp of {} bytes, commit of {} bytes: expected 8 and 4 or 8",
                timestamp.size, commit.size
            ));
        }
        let data_offset = usize::from(data.offset);
        if data_offset < usize::from(commit.offset + commit.size) {
            return Err("data overlaps the header".into());
        }
        Ok(PageLayout {
            timestamp: Field { layout: Layout::Scalar, signed: false, ..timestamp },
            commit: Field { layout: Layout::Scalar, signed: false, ..commit },
            data_offset,
            page_size: data_offset + usize::from(data.size),
        })
    }
}

/// The compressed record header (`events/header_event`): a u32 of
/// `type_len:5, time_delta:27`, then `array[]`. `type_len` 1 to `data_max`
/// is a data record of `4 × type_len` bytes, 0 one whose length is in
/// `array[0]`; the three highest values are the special records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    /// Padding (the rest of the page, or a discarded record).
    pub padding: u32,
    /// A time extend: `array[0]` holds bits 27 and up of the delta.
    pub time_extend: u32,
    /// An absolute timestamp (bits 0–58).
    pub time_stamp: u32,
    /// The largest `type_len` of a data record.
    pub data_max: u32,
}

impl RecordHeader {
    /// Parses the text of `events/header_event`. The bit widths are checked,
    /// not just read: a kernel with another header would need another decoder.
    pub fn parse(text: &str) -> Result<RecordHeader, String> {
        let bits = |name: &str| -> Option<u32> {
            let line = text.lines().find(|l| l.split(':').next().map(str::trim) == Some(name))?;
            line.split(':').nth(1)?.split_whitespace().next()?.parse().ok()
        };
        if bits("type_len") != Some(5) || bits("time_delta") != Some(27) {
            return Err("expected type_len of 5 bits and time_delta of 27 bits".into());
        }
        let ty = |name: &str| -> Result<u32, String> {
            text.lines()
                .find(|l| l.split(':').next().map(str::trim) == Some(name))
                .and_then(|l| l.rsplit("==").next()?.trim().parse().ok())
                .ok_or_else(|| format!("no `{name}` line"))
        };
        let h = RecordHeader {
            padding: ty("padding")?,
            time_extend: ty("time_extend")?,
            time_stamp: ty("time_stamp")?,
            data_max: text
                .lines()
                .find(|l| l.trim_start().starts_with("data max type_len"))
                .and_then(|l| l.rsplit("==").next()?.trim().parse().ok())
                .ok_or("no `data max type_len` line")?,
        };
        if h.data_max >= h.padding.min(h.time_extend).min(h.time_stamp) || h.time_stamp > 31 {
            return Err(format!("inconsistent record types {h:?}"));
        }
        Ok(h)
    }
}

/// Both headers of a tracefs `events` directory, read and parsed.
pub fn load_headers(events: &Path) -> Result<(PageLayout, RecordHeader), Error> {
    let read = |name: &str| {
        let path = events.join(name);
        let text = read_at_once(&path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        Ok::<_, Error>((path, text))
    };
    let (path, text) = read("header_page")?;
    let page = PageLayout::parse(&text).map_err(|what| Error::Format { path, what })?;
    let (path, text) = read("header_event")?;
    let record = RecordHeader::parse(&text).map_err(|what| Error::Format { path, what })?;
    Ok((page, record))
}

/// Reads a file in one `read` call. The kernel prints `header_page` and
/// `header_event` afresh on each read and answers any read at a non-zero
/// offset with end-of-file, so a reader that starts small (as
/// `read_to_string` does, with a 32-byte probe) gets a truncated header.
pub(super) fn read_at_once(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut buf = vec![0u8; 64 << 10];
    let n = std::fs::File::open(path)?.read(&mut buf)?;
    buf.truncate(n);
    String::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
\tfield:__data_loc char[] name;\toffset:40;\tsize:4;\tsigned:0;\n\
\tfield:char buf[];\toffset:44;\tsize:0;\tsigned:0;\n\
\nprint fmt: \"prev_comm=%s\", REC->prev_comm\n";

    #[test]
    fn a_format_file_gives_id_and_resolved_fields() {
        let f = EventFormat::parse("sched", SWITCH).unwrap();
        assert_eq!((f.id(), f.full_name()), (372, "sched:sched_switch".to_string()));
        let pid = f.field("common_pid").unwrap();
        assert_eq!(pid, Field { offset: 4, size: 4, signed: true, layout: Layout::Scalar });
        assert_eq!(f.field("prev_comm").unwrap().layout, Layout::Array);
        assert_eq!(f.field("name").unwrap(), Field { offset: 40, size: 4, signed: false, layout: Layout::DataLoc });
        assert_eq!(f.field("buf").unwrap().layout, Layout::Rest);
        assert_eq!(f.field("nope"), None);
        assert_eq!(f.fields().count(), 9);
    }

    #[test]
    fn fields_read_signed_unsigned_strings_and_located_data() {
        let f = EventFormat::parse("sched", SWITCH).unwrap();
        let mut rec = vec![0u8; 44];
        rec[4..8].copy_from_slice(&(-2i32).to_ne_bytes());
        rec[8..12].copy_from_slice(b"abc\0");
        rec[32..40].copy_from_slice(&(-1i64).to_ne_bytes());
        rec[40..44].copy_from_slice(&((4u32 << 16) | 44).to_ne_bytes());
        rec.extend_from_slice(b"eth0\0\0\0\0");
        assert_eq!(f.field("common_pid").unwrap().i64(&rec), Some(-2));
        assert_eq!(f.field("common_pid").unwrap().u64(&rec), Some(0xffff_fffe));
        assert_eq!(f.field("prev_state").unwrap().i64(&rec), Some(-1));
        assert_eq!(f.field("prev_comm").unwrap().c_str(&rec), Some(&b"abc"[..]));
        assert_eq!(f.field("prev_comm").unwrap().u64(&rec), None, "an array is not a scalar");
        assert_eq!(f.field("name").unwrap().bytes(&rec), Some(&b"eth0"[..]));
        assert_eq!(f.field("buf").unwrap().bytes(&rec).map(<[u8]>::len), Some(8));
        // A locator pointing past the record, and a short record, give None.
        rec[40..44].copy_from_slice(&((4u32 << 16) | 60).to_ne_bytes());
        assert_eq!(f.field("name").unwrap().bytes(&rec), None);
        assert_eq!(f.field("prev_state").unwrap().i64(&rec[..36]), None);
    }

    #[test]
    fn a_format_without_id_is_refused() {
        assert!(EventFormat::parse("x", "name: y\nformat:\n").is_err());
    }

    #[test]
    fn the_page_header_gives_the_commit_word_and_the_page_size() {
        let text = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        let p = PageLayout::parse(text).unwrap();
        assert_eq!((p.commit.offset, p.commit.size, p.data_offset, p.page_size), (8, 8, 16, 4096));
        assert!(PageLayout::parse("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n").is_err());
    }

    #[test]
    fn the_record_header_gives_the_special_types() {
        let text = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\
\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\
\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";
        let h = RecordHeader::parse(text).unwrap();
        assert_eq!(h, RecordHeader { padding: 29, time_extend: 30, time_stamp: 31, data_max: 28 });
        assert!(RecordHeader::parse(&text.replace("27 bits", "26 bits")).is_err());
    }
}
