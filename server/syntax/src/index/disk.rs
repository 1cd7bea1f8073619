//! The index's tags on disk, so that a new process starts warm: [`SymbolIndex::save`] writes
//! what the index holds of files read from disk (editor buffers are left out), and
//! [`SymbolIndex::load`] puts it back. An entry keeps the stamp its tags were made from
//! (modification time and length), so the first update after a load parses only the files that
//! changed since; a file whose stamp differs is simply parsed again.
//!
//! The file is one little-endian blob: a header with the format and Tandem's version (queries
//! change between versions, and with them the tags), the entries, and an FNV-1a checksum of
//! all that. Anything unexpected (another version, a short or damaged file) loads nothing, and
//! the index is built from the sources as if there were no file. Writers write a file of their
//! own beside it and rename it over the old one, so that concurrent Tandem processes never
//! leave a mix: a reader sees one whole file or another.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::PoisonError;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{rank, Definition, FileEntry, References, Span, Stamp, SymbolIndex};
use crate::Language;

const MAGIC: &[u8; 8] = b"TNDMTAGS";
const FORMAT: u32 = 1;
const VERSION: &str = env!("CARGO_PKG_VERSION");

impl SymbolIndex {
    /// Writes the tags of the indexed files read from disk to `path` (its folder is made if
    /// needed), replacing the file at once. Returns how many files it holds.
    pub fn save(&self, path: &Path) -> std::io::Result<usize> {
        let (bytes, count) = {
            let indexed = self.files.read().unwrap_or_else(PoisonError::into_inner);
            encode(&indexed)
        };
        // Private like the rest of the state directory: the tags name the workspace's code.
        if let Some(parent) = path.parent() {
            let mut folders = std::fs::DirBuilder::new();
            folders.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut folders, 0o700);
            folders.create(parent)?;
        }
        // A name no other writer uses, in the same folder so that the rename is atomic.
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let mut temporary = path.as_os_str().to_owned();
        temporary.push(format!(
            ".{}.{}.tmp",
            std::process::id(),
            WRITES.fetch_add(1, Ordering::Relaxed)
        ));
        let temporary = PathBuf::from(temporary);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let written = options
            .open(&temporary)
            .and_then(|mut file| file.write_all(&bytes))
            .and_then(|()| std::fs::rename(&temporary, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written.map(|()| count)
    }

    /// Puts the tags saved at `path` into the index, for the files it does not hold yet (what
    /// it holds is as new or newer). Returns how many it put in; a missing, damaged or
    /// other-version file puts in none. Waits for a running update to finish first, and an
    /// update that comes meanwhile waits for the load.
    pub fn load(&self, path: &Path) -> usize {
        // Before reading: an update that came meanwhile would parse what the file holds.
        let _slot = self.slot(None).0;
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::debug!(path = %path.display(), %error, "no saved tags");
                return 0;
            }
        };
        let Some(entries) = decode(&bytes) else {
            tracing::info!(path = %path.display(), "saved tags unreadable; indexing anew");
            return 0;
        };
        let mut indexed = self.files.write().unwrap_or_else(PoisonError::into_inner);
        let mut loaded = 0;
        for (path, entry) in entries {
            if let std::collections::hash_map::Entry::Vacant(slot) = indexed.entry(path) {
                slot.insert(entry);
                loaded += 1;
            }
        }
        loaded
    }
}

fn encode(indexed: &HashMap<PathBuf, FileEntry>) -> (Vec<u8>, usize) {
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(MAGIC);
    put_u32(&mut out, FORMAT);
    put_bytes(&mut out, VERSION.as_bytes());
    let count_at = out.len();
    put_u64(&mut out, 0);
    let mut count = 0usize;
    for (path, entry) in indexed {
        let Stamp::Disk { modified, len } = entry.stamp else {
            continue;
        };
        // A time before 1970 could not be told apart from none; such a file is parsed anew.
        let modified = match modified.map(|time| time.duration_since(UNIX_EPOCH)) {
            Some(Ok(since)) => Some(since),
            Some(Err(_)) => continue,
            None => None,
        };
        let (Some(path), Some(language)) = (
            path.to_str(),
            Language::ALL.iter().position(|l| *l == entry.language),
        ) else {
            continue;
        };
        put_bytes(&mut out, path.as_bytes());
        out.push(language as u8);
        match modified {
            Some(since) => {
                out.push(1);
                put_u64(&mut out, since.as_secs());
                put_u32(&mut out, since.subsec_nanos());
            }
            None => out.push(0),
        }
        put_u64(&mut out, len);
        put_u32(&mut out, entry.line_count);
        put_bytes(&mut out, entry.strings.as_bytes());
        put_u32(&mut out, entry.definitions.len() as u32);
        for definition in &entry.definitions {
            put_span(&mut out, definition.name);
            put_bytes(&mut out, definition.kind.as_bytes());
            put_u32(&mut out, definition.line);
            put_span(&mut out, definition.scopes);
        }
        put_u32s(&mut out, &entry.scopes);
        put_u32(&mut out, entry.references.len() as u32);
        for references in &entry.references {
            put_span(&mut out, references.name);
            put_bytes(&mut out, references.kind.as_bytes());
            put_span(&mut out, references.lines);
        }
        put_u32s(&mut out, &entry.reference_lines);
        put_u32(&mut out, entry.lines.len() as u32);
        for (line, span) in &entry.lines {
            put_u32(&mut out, *line);
            put_span(&mut out, *span);
        }
        count += 1;
    }
    out[count_at..count_at + 8].copy_from_slice(&(count as u64).to_le_bytes());
    let checksum = fnv1a_64(&out);
    put_u64(&mut out, checksum);
    (out, count)
}

fn decode(bytes: &[u8]) -> Option<Vec<(PathBuf, FileEntry)>> {
    let body_len = bytes.len().checked_sub(8)?;
    let (body, checksum) = bytes.split_at(body_len);
    if fnv1a_64(body).to_le_bytes() != checksum {
        return None;
    }
    let mut input = Reader { bytes: body };
    if input.take(MAGIC.len())? != MAGIC
        || input.u32()? != FORMAT
        || input.bytes()? != VERSION.as_bytes()
    {
        return None;
    }
    let count = input.u64()?;
    let mut entries = Vec::new();
    for _ in 0..count {
        let path = PathBuf::from(std::str::from_utf8(input.bytes()?).ok()?);
        let language = *Language::ALL.get(usize::from(input.u8()?))?;
        let modified = match input.u8()? {
            0 => None,
            1 => {
                let secs = input.u64()?;
                let nanos = input.u32()?;
                Some(UNIX_EPOCH.checked_add(Duration::new(secs, nanos))?)
            }
            _ => return None,
        };
        let stamp = Stamp::Disk {
            modified: modified.map(|time: SystemTime| time),
            len: input.u64()?,
        };
        let line_count = input.u32()?;
        let strings: Box<str> = std::str::from_utf8(input.bytes()?).ok()?.into();
        let kinds = &language.queries().ok()?.tag_kinds;
        let kind = |name: &[u8]| -> Option<&'static str> {
            kinds
                .iter()
                .flatten()
                .map(|(_, kind)| kind.as_str())
                .find(|kind| kind.as_bytes() == name)
        };
        let text = |span: Span| strings.get(span.range()).unwrap_or("");
        let mut definitions = Vec::new();
        for _ in 0..input.u32()? {
            let name = input.span()?;
            let kind = kind(input.bytes()?)?;
            definitions.push(Definition {
                key: rank::name_key(language, text(name)),
                name,
                kind,
                line: input.u32()?,
                scopes: input.span()?,
            });
        }
        // Keys are recomputed, and may differ from the build that saved the file (the hasher
        // is not promised stable across Rust releases): sort again, as lookups search by key.
        definitions.sort_by_key(|definition| (definition.key, definition.line));
        let scopes = input.u32s()?;
        let mut references = Vec::new();
        for _ in 0..input.u32()? {
            let name = input.span()?;
            let kind = kind(input.bytes()?)?;
            references.push(References {
                key: rank::name_key(language, text(name)),
                name,
                kind,
                lines: input.span()?,
            });
        }
        let reference_lines = input.u32s()?;
        let mut lines = Vec::new();
        for _ in 0..input.u32()? {
            lines.push((input.u32()?, input.span()?));
        }
        entries.push((
            path,
            FileEntry {
                stamp,
                language,
                line_count,
                strings,
                definitions: definitions.into(),
                scopes,
                references: references.into(),
                reference_lines,
                lines: lines.into(),
                buffer: None,
            },
        ));
    }
    input.bytes.is_empty().then_some(entries)
}

fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(out, bytes.len() as u32);
    out.extend_from_slice(bytes);
}

fn put_span(out: &mut Vec<u8>, span: Span) {
    put_u32(out, span.start);
    put_u32(out, span.len);
}

fn put_u32s(out: &mut Vec<u8>, values: &[u32]) {
    put_u32(out, values.len() as u32);
    for value in values {
        put_u32(out, *value);
    }
}

/// Reads what `put_*` wrote; `None` past the end.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, count: usize) -> Option<&'a [u8]> {
        if count > self.bytes.len() {
            return None;
        }
        let (taken, rest) = self.bytes.split_at(count);
        self.bytes = rest;
        Some(taken)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|bytes| bytes[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        self.take(len)
    }

    fn span(&mut self) -> Option<Span> {
        Some(Span {
            start: self.u32()?,
            len: self.u32()?,
        })
    }

    fn u32s(&mut self) -> Option<Box<[u32]>> {
        let len = self.u32()? as usize;
        let raw = self.take(len.checked_mul(4)?)?;
        Some(
            raw.chunks_exact(4)
                .map(|chunk| u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
                .collect(),
        )
    }
}

fn fnv1a_64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::FileSource;

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("lib.rs"),
            "pub struct Parser;\nimpl Parser {\n    pub fn parse_expr(&self) {}\n}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("main.rs"),
            "fn main() {\n    let p = Parser;\n    p.parse_expr();\n}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("tool.py"),
            "def helper_fn():\n    return 1\n",
        )
        .unwrap();
        dir
    }

    fn listing(dir: &Path) -> Vec<(PathBuf, FileSource)> {
        SymbolIndex::walk(&[dir.to_path_buf()], 100, 1 << 20)
            .into_iter()
            .map(|path| (path, FileSource::Disk))
            .collect()
    }

    fn indexed(dir: &Path) -> SymbolIndex {
        let index = SymbolIndex::new();
        let stats = index.update(listing(dir), None);
        assert_eq!(stats.parsed, 3);
        index
    }

    #[test]
    #[cfg(unix)]
    fn saved_tags_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = workspace();
        let index = indexed(dir.path());
        let saved = dir.path().join("state/tags/tags.bin");
        index.save(&saved).unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&saved), 0o600);
        assert_eq!(mode(saved.parent().unwrap()), 0o700);
    }

    #[test]
    fn saved_tags_load_and_need_no_parse() {
        let dir = workspace();
        let index = indexed(dir.path());
        let saved = dir.path().join("state/tags.bin");
        assert_eq!(index.save(&saved).unwrap(), 3);

        let fresh = SymbolIndex::new();
        assert_eq!(fresh.load(&saved), 3);
        let stats = fresh.update(listing(dir.path()), None);
        assert_eq!((stats.parsed, stats.files, stats.complete), (0, 3, true));
        assert_eq!(fresh.parse_count(), 0);
        for name in ["Parser", "parse_expr", "helper_fn"] {
            assert_eq!(fresh.definitions(name, None), index.definitions(name, None));
        }
        assert_eq!(fresh.references("Parser"), index.references("Parser"));
        let request = crate::MapRequest {
            max_tokens: 1024,
            ..crate::MapRequest::default()
        };
        let display = |path: &Path| path.display().to_string();
        assert_eq!(
            fresh.repo_map(&request, &display),
            index.repo_map(&request, &display)
        );
    }

    #[test]
    fn a_file_changed_since_the_save_is_parsed_again() {
        let dir = workspace();
        let index = indexed(dir.path());
        let saved = dir.path().join("tags.bin");
        index.save(&saved).unwrap();

        // Another length.
        std::fs::write(
            dir.path().join("tool.py"),
            "def helper_fn():\n    return 1\n\ndef other_fn():\n    pass\n",
        )
        .unwrap();
        // The same length, another modification time.
        let main = dir.path().join("main.rs");
        let text = std::fs::read_to_string(&main).unwrap();
        std::fs::write(&main, text.replace("main", "mian")).unwrap();
        let file = std::fs::File::options().write(true).open(&main).unwrap();
        file.set_modified(SystemTime::now() + Duration::from_secs(5))
            .unwrap();

        let fresh = SymbolIndex::new();
        assert_eq!(fresh.load(&saved), 3);
        let stats = fresh.update(listing(dir.path()), None);
        assert_eq!((stats.parsed, stats.files), (2, 3));
        assert_eq!(fresh.definitions("other_fn", None).len(), 1);
        assert_eq!(fresh.definitions("mian", None).len(), 1);
        assert!(fresh.definitions("main", None).is_empty());
    }

    #[test]
    fn a_damaged_or_foreign_file_loads_nothing() {
        let dir = workspace();
        let index = indexed(dir.path());
        let saved = dir.path().join("tags.bin");
        index.save(&saved).unwrap();
        let good = std::fs::read(&saved).unwrap();

        let mut flipped = good.clone();
        flipped[good.len() / 2] ^= 0x40;
        let mut other_format = good.clone();
        other_format[MAGIC.len()] = 99;
        let damaged: [&[u8]; 5] = [
            &good[..good.len() - 1],
            &good[..good.len() / 3],
            &flipped,
            b"",
            b"not tags at all, but long enough to have a checksum",
        ];
        for bytes in damaged.iter().copied().chain([&other_format[..]]) {
            std::fs::write(&saved, bytes).unwrap();
            let fresh = SymbolIndex::new();
            assert_eq!(fresh.load(&saved), 0);
            // And it is built from the sources instead.
            assert_eq!(fresh.update(listing(dir.path()), None).parsed, 3);
        }
        assert_eq!(SymbolIndex::new().load(&dir.path().join("missing")), 0);
    }

    #[test]
    fn concurrent_writers_leave_one_whole_file() {
        let dir = workspace();
        // Two indexes of different sizes, saved over each other from several threads while
        // others load: every load finds one whole file.
        let big = Arc::new(indexed(dir.path()));
        let small = Arc::new(SymbolIndex::new());
        small.update(vec![(dir.path().join("lib.rs"), FileSource::Disk)], None);
        let saved = Arc::new(dir.path().join("shared/tags.bin"));
        std::thread::scope(|scope| {
            for writer in 0..4 {
                let (index, saved) = if writer % 2 == 0 {
                    (Arc::clone(&big), Arc::clone(&saved))
                } else {
                    (Arc::clone(&small), Arc::clone(&saved))
                };
                scope.spawn(move || {
                    for _ in 0..50 {
                        index.save(&saved).unwrap();
                    }
                });
            }
            for _ in 0..2 {
                let saved = Arc::clone(&saved);
                scope.spawn(move || {
                    for _ in 0..100 {
                        let loaded = SymbolIndex::new().load(&saved);
                        // Before the first rename there is no file yet.
                        assert!([0, 1, 3].contains(&loaded), "{loaded}");
                    }
                });
            }
        });
        assert!([1, 3].contains(&SymbolIndex::new().load(&saved)));
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("shared"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, ["tags.bin"]);
    }
}
