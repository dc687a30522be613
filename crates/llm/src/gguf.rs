//! Reads a GGUF model file's header without loading it: checks that it is GGUF, that it is
//! whole (every tensor's bytes are inside the file), and what architecture it declares.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::Path;

/// What a GGUF header says about its model.
#[derive(Debug, Clone, PartialEq)]
pub struct GgufInfo {
    pub architecture: String,
    /// The bytes the header and tensors need; the file is at least this long.
    pub needed_bytes: u64,
    /// How most of its weights are stored (`general.file_type`, llama.cpp's `llama_ftype`),
    /// when it says.
    pub file_type: Option<u32>,
}

/// Why a file is not a usable GGUF model.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GgufError {
    #[error("cannot read {path}: {detail}")]
    Io { path: String, detail: String },
    #[error("{path} is not a GGUF model (it starts with {found:?}, not \"GGUF\")")]
    NotGguf { path: String, found: String },
    #[error("{path} uses GGUF version {version}; versions 2 and 3 are supported")]
    Version { path: String, version: u32 },
    #[error("{path} is truncated: it has {actual} bytes but its tensors need {needed}")]
    Truncated {
        path: String,
        actual: u64,
        needed: u64,
    },
    #[error("{path} has a malformed header: {detail}")]
    Malformed { path: String, detail: String },
}

const GGUF_STRING: u32 = 8;
const GGUF_ARRAY: u32 = 9;

/// Reads and checks the header of the GGUF file at `path`.
pub fn inspect(path: &Path) -> Result<GgufInfo, GgufError> {
    let shown = path.display().to_string();
    let io = |e: std::io::Error| GgufError::Io {
        path: shown.clone(),
        detail: e.to_string(),
    };
    let file = File::open(path).map_err(io)?;
    let actual = file.metadata().map_err(io)?.len();
    read_header(file, actual, shown)
}

/// Checks the header read from `source`, a file of `actual` bytes shown as `shown`.
fn read_header<R: Read + Seek>(
    source: R,
    actual: u64,
    shown: String,
) -> Result<GgufInfo, GgufError> {
    let mut reader = Reader {
        inner: BufReader::with_capacity(1 << 16, source),
        remaining: actual,
    };
    let malformed = |detail: String| GgufError::Malformed {
        path: shown.clone(),
        detail,
    };
    let mut magic = [0u8; 4];
    if reader.exact(&mut magic).is_err() || &magic != b"GGUF" {
        return Err(GgufError::NotGguf {
            path: shown.clone(),
            found: String::from_utf8_lossy(&magic[..actual.min(4) as usize]).into_owned(),
        });
    }
    let version = reader.u32().map_err(|e| malformed(e.detail()))?;
    if !(2..=3).contains(&version) {
        return Err(GgufError::Version {
            path: shown.clone(),
            version,
        });
    }
    let truncated = || GgufError::Truncated {
        path: shown.clone(),
        actual,
        needed: actual + 1,
    };
    let tensors = reader.u64().map_err(|e| malformed(e.detail()))?;
    let entries = reader.u64().map_err(|e| malformed(e.detail()))?;
    let mut architecture = None;
    let mut file_type = None;
    let mut alignment = 32u64;
    for _ in 0..entries {
        let key = reader.string().map_err(|_| truncated())?;
        let kind = reader.u32().map_err(|_| truncated())?;
        match (key.as_str(), kind) {
            ("general.architecture", GGUF_STRING) => {
                architecture = Some(reader.string().map_err(|_| truncated())?);
            }
            ("general.alignment", 4) => {
                alignment = u64::from(reader.u32().map_err(|e| malformed(e.detail()))?)
            }
            ("general.file_type", 4) => {
                file_type = Some(reader.u32().map_err(|e| malformed(e.detail()))?)
            }
            _ => reader.skip_value(kind).map_err(|e| match e {
                ReadStop::Short => truncated(),
                ReadStop::Bad(detail) => malformed(detail),
            })?,
        }
    }
    let architecture =
        architecture.ok_or_else(|| malformed("no general.architecture entry".into()))?;
    let mut data_end = 0u64;
    for _ in 0..tensors {
        let _name = reader.string().map_err(|_| truncated())?;
        let dimensions = reader.u32().map_err(|_| truncated())?;
        if dimensions > 8 {
            return Err(malformed(format!("a tensor with {dimensions} dimensions")));
        }
        let mut elements = 1u64;
        for _ in 0..dimensions {
            elements = elements.saturating_mul(reader.u64().map_err(|_| truncated())?);
        }
        let kind = reader.u32().map_err(|_| truncated())?;
        let offset = reader.u64().map_err(|_| truncated())?;
        let bytes = tensor_bytes(kind, elements).unwrap_or(0);
        data_end = data_end.max(offset.saturating_add(bytes));
    }
    let header_end = actual - reader.remaining;
    let data_start = header_end.div_ceil(alignment.max(1)) * alignment.max(1);
    let needed_bytes = data_start + data_end;
    if actual < needed_bytes {
        return Err(GgufError::Truncated {
            path: shown,
            actual,
            needed: needed_bytes,
        });
    }
    Ok(GgufInfo {
        architecture,
        needed_bytes,
        file_type,
    })
}

/// Bytes of a tensor of ggml type `kind`; `None` for types this table does not know.
fn tensor_bytes(kind: u32, elements: u64) -> Option<u64> {
    // (bytes per block, elements per block) from ggml's type traits.
    let (block_bytes, block_elements) = match kind {
        0 => (4, 1),     // F32
        1 => (2, 1),     // F16
        2 => (18, 32),   // Q4_0
        3 => (20, 32),   // Q4_1
        6 => (22, 32),   // Q5_0
        7 => (24, 32),   // Q5_1
        8 => (34, 32),   // Q8_0
        9 => (36, 32),   // Q8_1
        10 => (84, 256), // Q2_K
        11 => (110, 256),
        12 => (144, 256), // Q4_K
        13 => (176, 256),
        14 => (210, 256), // Q6_K
        15 => (292, 256),
        24 => (1, 1), // I8
        25 => (2, 1),
        26 => (4, 1),
        27 => (8, 1),
        28 => (8, 1), // F64
        30 => (2, 1), // BF16
        _ => return None,
    };
    Some(elements.div_ceil(block_elements) * block_bytes)
}

/// Why reading the header stopped.
#[derive(Debug)]
enum ReadStop {
    /// The file ended before what the header promised.
    Short,
    /// What was read makes no sense, said why.
    Bad(String),
}

impl ReadStop {
    /// The reason as a malformed header's detail (none for a short file).
    fn detail(self) -> String {
        match self {
            ReadStop::Short => String::new(),
            ReadStop::Bad(detail) => detail,
        }
    }
}

struct Reader<R> {
    inner: BufReader<R>,
    remaining: u64,
}

impl<R: Read + Seek> Reader<R> {
    fn exact(&mut self, buffer: &mut [u8]) -> Result<(), ReadStop> {
        if (buffer.len() as u64) > self.remaining {
            return Err(ReadStop::Short);
        }
        self.inner.read_exact(buffer).map_err(|_| ReadStop::Short)?;
        self.remaining -= buffer.len() as u64;
        Ok(())
    }

    fn u32(&mut self) -> Result<u32, ReadStop> {
        let mut bytes = [0u8; 4];
        self.exact(&mut bytes)?;
        Ok(u32::from_le_bytes(bytes))
    }

    fn u64(&mut self) -> Result<u64, ReadStop> {
        let mut bytes = [0u8; 8];
        self.exact(&mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }

    fn skip(&mut self, count: u64) -> Result<(), ReadStop> {
        if count > self.remaining {
            return Err(ReadStop::Short);
        }
        // Relative, so a skip within what is buffered keeps the buffer: `seek` would drop it,
        // and a vocabulary's 49,152 skipped strings then read the file's first megabytes again
        // 64 KiB at a time, about 0.4 s a header on the default model.
        self.inner
            .seek_relative(count as i64)
            .map_err(|e| ReadStop::Bad(e.to_string()))?;
        self.remaining -= count;
        Ok(())
    }

    fn string(&mut self) -> Result<String, ReadStop> {
        let length = self.u64()?;
        if length > self.remaining {
            return Err(ReadStop::Short);
        }
        if length > 1 << 24 {
            return Err(ReadStop::Bad(format!("a {length}-byte string")));
        }
        let mut bytes = vec![0u8; length as usize];
        self.exact(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn skip_value(&mut self, kind: u32) -> Result<(), ReadStop> {
        match kind {
            0 | 1 | 7 => self.skip(1),
            2 | 3 => self.skip(2),
            4..=6 => self.skip(4),
            10..=12 => self.skip(8),
            GGUF_STRING => {
                let length = self.u64()?;
                self.skip(length)
            }
            GGUF_ARRAY => {
                let item_kind = self.u32()?;
                let count = self.u64()?;
                if count > self.remaining {
                    return Err(ReadStop::Short);
                }
                match item_kind {
                    GGUF_STRING | GGUF_ARRAY => {
                        for _ in 0..count {
                            self.skip_value(item_kind)?;
                        }
                        Ok(())
                    }
                    0 | 1 | 7 => self.skip(count),
                    2 | 3 => self.skip(count * 2),
                    4..=6 => self.skip(count * 4),
                    10..=12 => self.skip(count * 8),
                    other => Err(ReadStop::Bad(format!("unknown value type {other}"))),
                }
            }
            other => Err(ReadStop::Bad(format!("unknown value type {other}"))),
        }
    }
}

/// GGUF files made in memory, for tests here and in other crates (`fixtures` feature).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures {
    use super::*;

    /// A small but well-formed GGUF file: one F32 tensor of `elements` values.
    pub fn tiny_gguf(architecture: &str, elements: u64) -> Vec<u8> {
        gguf_with_tokens(architecture, elements, 2)
    }

    /// A well-formed GGUF file whose vocabulary has `tokens` strings, and one F32 tensor of
    /// `elements` values after it.
    pub fn gguf_with_tokens(architecture: &str, elements: u64, tokens: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let string = |out: &mut Vec<u8>, text: &str| {
            out.extend((text.len() as u64).to_le_bytes());
            out.extend(text.as_bytes());
        };
        out.extend(b"GGUF");
        out.extend(3u32.to_le_bytes());
        out.extend(1u64.to_le_bytes()); // tensors
        out.extend(3u64.to_le_bytes()); // entries
        string(&mut out, "general.architecture");
        out.extend(GGUF_STRING.to_le_bytes());
        string(&mut out, architecture);
        string(&mut out, &format!("{architecture}.context_length"));
        out.extend(4u32.to_le_bytes());
        out.extend(2048u32.to_le_bytes());
        string(&mut out, "tokenizer.ggml.tokens");
        out.extend(GGUF_ARRAY.to_le_bytes());
        out.extend(GGUF_STRING.to_le_bytes());
        out.extend(tokens.to_le_bytes());
        for token in 0..tokens {
            string(&mut out, &format!("t{token}"));
        }
        string(&mut out, "weight");
        out.extend(1u32.to_le_bytes());
        out.extend(elements.to_le_bytes());
        out.extend(0u32.to_le_bytes()); // F32
        out.extend(0u64.to_le_bytes());
        while out.len() % 32 != 0 {
            out.push(0);
        }
        out.extend(std::iter::repeat_n(0u8, elements as usize * 4));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn reads_the_architecture_and_notices_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.gguf");
        let bytes = tiny_gguf("llama", 100);
        std::fs::write(&path, &bytes).unwrap();
        let info = inspect(&path).unwrap();
        assert_eq!(info.architecture, "llama");
        assert_eq!(info.needed_bytes, bytes.len() as u64);

        std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
        let error = inspect(&path).unwrap_err().to_string();
        assert!(error.contains("truncated"), "{error}");
        std::fs::write(&path, &bytes[..60]).unwrap();
        assert!(
            inspect(&path)
                .unwrap_err()
                .to_string()
                .contains("truncated")
        );
    }

    /// A source that counts the bytes read from it.
    struct Counted {
        inner: std::io::Cursor<Vec<u8>>,
        read: std::rc::Rc<std::cell::Cell<u64>>,
    }

    impl Read for Counted {
        fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
            let read = self.inner.read(buffer)?;
            self.read.set(self.read.get() + read as u64);
            Ok(read)
        }
    }

    impl Seek for Counted {
        fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
            self.inner.seek(to)
        }
    }

    #[test]
    fn a_header_with_a_large_vocabulary_is_read_once() {
        // The default model's header skips 49,152 token strings; each skip once refilled the
        // 64 KiB buffer, reading the header's first megabytes tens of thousands of times.
        let bytes = gguf_with_tokens("llama", 1, 40_000);
        let size = bytes.len() as u64;
        assert!(size > 400_000, "the header spans many buffers: {size}");
        let read = std::rc::Rc::new(std::cell::Cell::new(0));
        let source = Counted {
            inner: std::io::Cursor::new(bytes),
            read: read.clone(),
        };
        let info = read_header(source, size, "vocab.gguf".into()).unwrap();
        // The tensor after the vocabulary was found where it is.
        assert_eq!(info.needed_bytes, size);
        assert!(
            read.get() <= size,
            "{} bytes read from a {size}-byte file",
            read.get()
        );
    }

    #[test]
    fn names_a_file_that_is_not_gguf() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.gguf");
        std::fs::write(&path, "<html>not found</html>").unwrap();
        let error = inspect(&path).unwrap_err().to_string();
        assert!(error.contains("is not a GGUF model"), "{error}");
        assert!(error.contains("notes.gguf"));
        let error = inspect(&dir.path().join("missing.gguf"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("cannot read"), "{error}");
    }
}
