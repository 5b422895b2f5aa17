//! Parser tests on ring-buffer pages captured from this kernel, checked
//! against the kernel's own text rendering of the very same events.
//!
//! `crates/rtick/tests/fixtures/ktrace/events/` holds this kernel's
//! `header_page`, `header_event` and `<sys>/<name>/format` files; each other
//! directory there holds what [`capture`] saved from one instance:
//!
//! - `cpuN.raw`: the pages `per_cpu/cpuN/trace_pipe_raw` gave, back to back;
//! - `trace-raw.txt`: the instance's `trace` with the `raw` option (pid,
//!   CPU, nanosecond timestamp and type of each event);
//! - `trace-fields.txt`: the same with the `fields` option (every field);
//! - `stats.txt`: `per_cpu/cpuN/stats` after the pages were read.
//!
//! The text is read first (it does not consume), then the pages: both show
//! the same events, and the expected values come from the kernel, not from
//! the parser under test.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::*;
use crate::ktrace::format::read_at_once;
use crate::ktrace::instance::Instance;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ktrace")
}

/// Records the fixtures into `$RTICK_KTRACE_CAPTURE` (run by hand, as root:
/// `RTICK_KTRACE_CAPTURE=crates/rtick/tests/fixtures/ktrace cargo test -p
/// rtick --lib ktrace::tests::fixture::capture -- --ignored`).
#[test]
#[ignore = "records the fixtures; run by hand"]
fn capture() {
    let Ok(out) = std::env::var("RTICK_KTRACE_CAPTURE") else { return };
    let Some((root, _lock)) = kernel() else { panic!("capturing needs root and tracefs") };
    let cpu = test_cpu();
    let out = Path::new(&out);
    save_formats(&root, &out.join("events"));
    // Every event of the analysis around a few sleeps, a device interrupt,
    // and a record too long for type_len (over 112 bytes), whose length is
    // then in array[0].
    let wakeups = Setup { kb: 64, events: true, fields: true };
    wakeups.capture(&root, &out.join("wakeups"), cpu, |mut marker| {
        let (_, _) = sleep_loop(cpu, Nanos::from_ms(1), 2);
        // A write that reaches the disk: its interrupt comes to this CPU here.
        let mut f = tempfile::NamedTempFile::new_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        f.write_all(&[7; 65536]).unwrap();
        f.as_file().sync_all().unwrap();
        on_cpu(cpu, move || {
            marker.write_all(LONG_MARK.as_bytes()).unwrap();
            // A timer disarmed before it expires: hrtimer_cancel.
            let t = crate::sys::fd::TimerFd::new(libc::CLOCK_MONOTONIC).unwrap();
            t.arm(crate::ClockId::Monotonic.now() + Nanos::from_secs(1), Nanos::ZERO).unwrap();
            t.arm(Time(0), Nanos::ZERO).unwrap();
        });
        let (_, _) = sleep_loop(cpu, Nanos::from_ms(1), 1);
    });
    // The capture is only useful with every event in it: run it again if not.
    let text = std::fs::read_to_string(out.join("wakeups/trace-fields.txt")).unwrap();
    for tp in Tracepoint::ALL {
        assert!(text.contains(&format!("{}: ", tp.name())), "no {tp} in this capture: capture again");
    }
    // Two marks 150 ms apart and nothing between (no event enabled): the
    // gap exceeds a 27-bit delta (134 ms), so the kernel writes a time extend.
    let extend = Setup { kb: 8, events: false, fields: false };
    extend.capture(&root, &out.join("extend"), cpu, |mut marker| {
        on_cpu(cpu, move || {
            marker.write_all(b"rtick fixture: before the gap").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(150));
            marker.write_all(LONG_MARK.as_bytes()).unwrap();
        });
    });
    // Two pages of buffer and thousands of events: most are overwritten.
    let overrun = Setup { kb: 4, events: true, fields: false };
    overrun.capture(&root, &out.join("overrun"), cpu, |_| {
        let (_, _) = sleep_loop(cpu, Nanos::from_us(100), 300);
    });
}

const LONG_MARK: &str =
    "rtick fixture: a trace_marker line long enough to need a record whose length is stored in array[0].";

/// How one fixture is recorded.
struct Setup {
    /// The CPU's buffer, KiB.
    kb: usize,
    /// Whether the analysis's events are enabled (trace_marker writes always record).
    events: bool,
    /// Whether `trace-fields.txt` is saved (only `trace-raw.txt` otherwise).
    fields: bool,
}

fn on_cpu(cpu: usize, f: impl FnOnce() + Send + 'static) {
    std::thread::spawn(move || {
        crate::sys::sched::set_affinity(&[cpu]).unwrap();
        f()
    })
    .join()
    .unwrap();
}

impl Setup {
    fn capture(&self, root: &Path, out: &Path, cpu: usize, work: impl FnOnce(std::fs::File)) {
        let inst = Instance::create(root, &format!("rtick-fixture-{}", std::process::id())).unwrap();
        inst.write("tracing_on", "0").unwrap();
        inst.set_clock("mono").unwrap();
        inst.set_cpumask(&[cpu]).unwrap();
        inst.write(&format!("per_cpu/cpu{cpu}/buffer_size_kb"), &self.kb.to_string()).unwrap();
        if self.events {
            super::session::enable_events(&inst, &[cpu], false, &Default::default()).unwrap();
        }
        save(&inst, out, cpu, self.fields, work);
    }
}

fn save(inst: &Instance, out: &Path, cpu: usize, fields: bool, work: impl FnOnce(std::fs::File)) {
    let marker = std::fs::OpenOptions::new().write(true).open(inst.dir().join("trace_marker")).unwrap();
    inst.write("tracing_on", "1").unwrap();
    work(marker);
    inst.write("tracing_on", "0").unwrap();

    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out).unwrap();
    // The raw text carries pid, CPU and timestamp; the fields text only the
    // event and its fields (no context-info), to keep the fixture small.
    inst.write("options/raw", "1").unwrap();
    std::fs::write(out.join("trace-raw.txt"), inst.read("trace").unwrap()).unwrap();
    inst.write("options/raw", "0").unwrap();
    if fields {
        inst.write("options/fields", "1").unwrap();
        inst.write("options/context-info", "0").unwrap();
        std::fs::write(out.join("trace-fields.txt"), inst.read("trace").unwrap()).unwrap();
    }
    let (page_layout, _) = format::load_headers(&inst.events_dir()).unwrap();
    let mut pipe = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(inst.dir().join(format!("per_cpu/cpu{cpu}/trace_pipe_raw")))
        .unwrap();
    let mut pages = Vec::new();
    let mut page = vec![0u8; page_layout.page_size];
    loop {
        match pipe.read(&mut page) {
            Ok(0) => break,
            Ok(n) => pages.extend_from_slice(&page[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
    }
    drop(pipe);
    std::fs::write(out.join(format!("cpu{cpu}.raw")), pages).unwrap();
    std::fs::write(out.join("stats.txt"), inst.read(&format!("per_cpu/cpu{cpu}/stats")).unwrap()).unwrap();
}

/// The headers and the format files of the events, shared by the captures
/// (one kernel made them all).
fn save_formats(root: &Path, out: &Path) {
    let inst = Instance::create(root, &format!("rtick-fixture-{}", std::process::id())).unwrap();
    let events = inst.events_dir();
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out).unwrap();
    for h in ["header_page", "header_event"] {
        std::fs::write(out.join(h), read_at_once(&events.join(h)).unwrap()).unwrap();
    }
    let formats = Tracepoint::ALL.iter().map(|t| (t.system(), t.name())).chain([("ftrace", "print")]);
    for (sys, name) in formats {
        let to = out.join(sys).join(name);
        std::fs::create_dir_all(&to).unwrap();
        std::fs::copy(events.join(sys).join(name).join("format"), to.join("format")).unwrap();
    }
}

/// Records of a page: timestamp and payload.
type Records = Vec<(u64, Vec<u8>)>;

/// A capture and the layout it is decoded with.
struct Fixture {
    dir: PathBuf,
    page: format::PageLayout,
    header: format::RecordHeader,
    formats: Vec<(Option<Tracepoint>, format::EventFormat)>,
}

impl Fixture {
    fn load(name: &str) -> Fixture {
        let events = fixtures().join("events");
        let (page, header) = format::load_headers(&events).unwrap();
        let mut formats: Vec<_> = Tracepoint::ALL
            .iter()
            .map(|&tp| (Some(tp), format::EventFormat::load(&events, tp.system(), tp.name()).unwrap()))
            .collect();
        formats.push((None, format::EventFormat::load(&events, "ftrace", "print").unwrap()));
        Fixture { dir: fixtures().join(name), page, header, formats }
    }

    fn format(&self, id: u16) -> &format::EventFormat {
        &self.formats.iter().find(|(_, f)| f.id() == id).unwrap_or_else(|| panic!("no format with id {id}")).1
    }

    fn decoder(&self) -> events::Decoder {
        let mut d = events::Decoder::new();
        for (tp, f) in &self.formats {
            if let Some(tp) = tp {
                d.add(*tp, f).unwrap();
            }
        }
        d
    }

    /// The raw file's pages: what each says was missed before it, and its records.
    fn pages(&self) -> Vec<(page::Missed, Records)> {
        let raw = std::fs::read_dir(&self.dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "raw"))
            .unwrap();
        let bytes = std::fs::read(raw).unwrap();
        assert_eq!(bytes.len() % self.page.page_size, 0);
        bytes
            .chunks(self.page.page_size)
            .map(|b| {
                let p = page::Page::parse(&self.page, &self.header, b).unwrap();
                let recs = p.records().map(|r| r.map(|r| (r.ts, r.payload.to_vec()))).collect::<Result<_, _>>();
                (p.missed, recs.unwrap())
            })
            .collect()
    }

    fn text(&self, name: &str) -> Vec<String> {
        let t = std::fs::read_to_string(self.dir.join(name)).unwrap();
        t.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).map(str::to_string).collect()
    }

    fn stats(&self) -> BufferStats {
        BufferStats::parse(&std::fs::read_to_string(self.dir.join("stats.txt")).unwrap()).unwrap()
    }

    /// Checks every record against `trace-raw.txt` (pid, CPU, timestamp to
    /// the nanosecond, and type; or the text of a `trace_marker` write).
    fn check_raw(&self, records: &[(u64, Vec<u8>)]) {
        let lines: Vec<String> = self.text("trace-raw.txt").into_iter().filter(|l| !l.starts_with("CPU:")).collect();
        assert_eq!(lines.len(), records.len(), "records: {} in the pages, {} in the text", records.len(), lines.len());
        let print = self.format(5);
        for (line, (ts, payload)) in lines.iter().zip(records) {
            let mut w = line.splitn(4, ' ');
            let (pid, _cpu, kts, rest) = (w.next().unwrap(), w.next().unwrap(), w.next().unwrap(), w.next().unwrap());
            assert_eq!(kts.parse::<u64>().unwrap(), *ts, "{line}");
            let id = u16::from_ne_bytes(payload[..2].try_into().unwrap());
            let common_pid = print.field("common_pid").unwrap().i64(payload).unwrap();
            assert_eq!(pid.parse::<i64>().unwrap(), common_pid, "{line}");
            match rest.strip_prefix("type: ") {
                Some(ty) => assert_eq!(ty.parse::<u16>().unwrap(), id, "{line}"),
                None => {
                    // "# <ip> <text>": a trace_marker write, ftrace:print.
                    assert_eq!(id, print.id(), "{line}");
                    let text = rest.splitn(3, ' ').nth(2).unwrap();
                    let buf = print.field("buf").unwrap().c_str(payload).unwrap();
                    // The kernel ends a mark without a newline with one.
                    assert_eq!(String::from_utf8_lossy(buf).strip_suffix('\n'), Some(text), "{line}");
                }
            }
        }
    }
}

/// The text of each field of `line` ("name: f1=v1 f2=v2 …", as the `fields`
/// option prints it), found by the format's field names in order (values
/// may hold spaces: task names do).
fn text_fields<'a>(line: &'a str, f: &'a format::EventFormat) -> Vec<(&'a str, &'a str)> {
    let names: Vec<&str> = f.fields().map(|(n, _)| n).filter(|n| !n.starts_with("common_")).collect();
    let body = line.split_once(": ").unwrap().1;
    let mut at = 0;
    let mut starts = Vec::new();
    for n in &names {
        let key = format!("{n}=");
        let i = at + body[at..].find(&key).unwrap_or_else(|| panic!("no {key} in {line}"));
        starts.push((i, i + key.len()));
        at = i + key.len();
    }
    (0..names.len())
        .map(|k| {
            let end = starts.get(k + 1).map_or(body.len(), |s| s.0 - 1);
            (names[k], &body[starts[k].1..end])
        })
        .collect()
}

/// A decoded value as the kernel's text shows it.
enum Val {
    Int(u64),
    Str(String),
}

/// The fields of a typed event, by their format names.
fn values(kind: &EventKind) -> Vec<(&'static str, Val)> {
    use Val::{Int, Str};
    let comm = |c: &Comm| Str(c.to_string());
    match kind {
        EventKind::HrtimerStart { hrtimer, function, expires, softexpires, mode } => vec![
            ("hrtimer", Int(*hrtimer)),
            ("function", Int(*function)),
            ("expires", Int(expires.0 as u64)),
            ("softexpires", Int(softexpires.0 as u64)),
            ("mode", Int(u64::from(*mode))),
        ],
        EventKind::HrtimerExpireEntry { hrtimer, now, function } => {
            vec![("hrtimer", Int(*hrtimer)), ("now", Int(now.0 as u64)), ("function", Int(*function))]
        }
        EventKind::HrtimerExpireExit { hrtimer } | EventKind::HrtimerCancel { hrtimer } => {
            vec![("hrtimer", Int(*hrtimer))]
        }
        EventKind::LocalTimerEntry { vector } | EventKind::LocalTimerExit { vector } => {
            vec![("vector", Int(*vector as u64))]
        }
        EventKind::SchedWaking(w) | EventKind::SchedWakeup(w) => vec![
            ("comm", comm(&w.comm)),
            ("pid", Int(w.pid as u64)),
            ("prio", Int(w.prio as u64)),
            ("target_cpu", Int(w.target_cpu as u64)),
        ],
        EventKind::SchedSwitch(s) => vec![
            ("prev_comm", comm(&s.prev_comm)),
            ("prev_pid", Int(s.prev_pid as u64)),
            ("prev_prio", Int(s.prev_prio as u64)),
            ("prev_state", Int(s.prev_state as u64)),
            ("next_comm", comm(&s.next_comm)),
            ("next_pid", Int(s.next_pid as u64)),
            ("next_prio", Int(s.next_prio as u64)),
        ],
        EventKind::IrqHandlerEntry { irq, name } => vec![("irq", Int(*irq as u64)), ("name", Str(name.to_string()))],
        EventKind::IrqHandlerExit { irq, ret } => vec![("irq", Int(*irq as u64)), ("ret", Int(*ret as u64))],
        EventKind::SoftirqEntry { vec } | EventKind::SoftirqExit { vec } => vec![("vec", Int(u64::from(*vec)))],
        EventKind::SysExit { id, ret } => vec![("id", Int(*id as u64)), ("ret", Int(*ret as u64))],
        EventKind::IpiEntry { vector, .. } | EventKind::IpiExit { vector, .. } => {
            vec![("vector", Int(*vector as u64))]
        }
        EventKind::Nmi { delta_ns, handled } => {
            vec![("delta_ns", Int(*delta_ns as u64)), ("handled", Int(*handled as u64))]
        }
        EventKind::IpiSend(s) => {
            let mut v = vec![("callsite", Int(s.callsite)), ("callback", Int(s.callback))];
            if let crate::ktrace::Targets::Cpu(c) = s.targets {
                v.push(("cpu", Int(u64::from(c))));
            }
            v
        }
        EventKind::CsdQueue { cpu, func } => vec![("cpu", Int(u64::from(*cpu))), ("func", Int(*func))],
        EventKind::TickStop { success, dependency } => {
            vec![("success", Int(u64::from(*success))), ("dependency", Int(u64::from(dependency.0)))]
        }
        EventKind::WorkStart { work, function } => vec![("work", Int(*work)), ("function", Int(*function))],
        EventKind::WorkEnd { work } => vec![("work", Int(*work))],
        EventKind::CpuIdle { state } => vec![("state", Int(u64::from(*state)))],
        EventKind::KernelStack { frames } => vec![("size", Int(frames.len() as u64))],
    }
}

/// Whether the kernel's text `t` of a field of `size` bytes shows `v`:
/// "0x<hex> (<decimal>)" for numbers, the bytes for strings, and for code
/// addresses "<symbol>+<offset> (<decimal>)", whose decimal the kernel
/// prints through an int (its low 32 bits).
fn shows(t: &str, size: u16, v: &Val) -> bool {
    match v {
        Val::Str(s) => t == s,
        Val::Int(v) => {
            let mask = |bytes: u16| if bytes >= 8 { u64::MAX } else { (1u64 << (8 * bytes)) - 1 };
            if let Some(hex) = t.strip_prefix("0x") {
                let hex = hex.split(' ').next().unwrap();
                u64::from_str_radix(hex, 16).unwrap() & mask(size) == v & mask(size)
            } else {
                let dec = t.rsplit_once('(').unwrap().1.trim_end_matches(')');
                dec.parse::<i64>().unwrap() as u64 & mask(4) == v & mask(4)
            }
        }
    }
}

#[test]
fn captured_pages_decode_to_the_kernels_own_text() {
    let fx = Fixture::load("wakeups");
    let pages = fx.pages();
    assert!(pages.iter().all(|(m, _)| *m == page::Missed::None));
    let records: Vec<_> = pages.into_iter().flat_map(|(_, r)| r).collect();
    fx.check_raw(&records);
    let stats = fx.stats();
    assert_eq!((stats.read, stats.overrun, stats.entries), (records.len() as u64, 0, 0));

    let mut decoder = fx.decoder();
    let fields = fx.text("trace-fields.txt");
    let mut seen = std::collections::HashSet::new();
    let mut long = 0;
    for ((ts, payload), line) in records.iter().zip(&fields) {
        let rec = page::RawRecord { ts: *ts, payload };
        let f = fx.format(rec.id().unwrap());
        long += usize::from(payload.len() > 112);
        let events::Decoded::Event(e) = decoder.decode(&rec) else {
            assert!(line.starts_with("UNKNOWN TYPE"), "a known record left undecoded: {line}");
            continue;
        };
        assert_eq!(e.ts, Time(*ts as i64));
        assert!(line.starts_with(&format!("{}: ", f.full_name().split_once(':').unwrap().1)), "{line}");
        let text = text_fields(line, f);
        for (name, v) in values(&e.kind) {
            let t = text.iter().find(|(n, _)| *n == name).unwrap().1;
            assert!(shows(t, f.field(name).unwrap().size, &v), "{name}: {t} in {line}");
        }
        seen.insert(std::mem::discriminant(&e.kind));
    }
    assert_eq!(seen.len(), 13, "every typed event is in the capture");
    assert!(long >= 1, "the capture has a record whose length is in array[0]");
}

#[test]
fn a_time_extend_and_a_long_record_decode_to_the_nanosecond() {
    let fx = Fixture::load("extend");
    let records: Vec<_> = fx.pages().into_iter().flat_map(|(_, r)| r).collect();
    fx.check_raw(&records);
    assert_eq!(records.len(), 2);
    assert!(records[1].0 - records[0].0 > 1 << 27, "the gap needs a time extend");
    let buf = fx.format(5).field("buf").unwrap();
    assert_eq!(buf.c_str(&records[1].1), Some(format!("{LONG_MARK}\n").as_bytes()));
}

#[test]
fn an_overrun_shows_in_the_pages_as_the_kernel_counted_it() {
    let fx = Fixture::load("overrun");
    let pages = fx.pages();
    let stats = fx.stats();
    assert!(stats.overrun > 0);
    assert_eq!(pages[0].0, page::Missed::Count(stats.overrun), "the first page read carries the count");
    assert!(pages[1..].iter().all(|(m, _)| *m == page::Missed::None));
    let records: Vec<_> = pages.into_iter().flat_map(|(_, r)| r).collect();
    assert_eq!(stats.read, records.len() as u64);
    fx.check_raw(&records);
}
