//! Reading a file the user named (a scenario, a lock script) without trusting it: only a
//! regular file is read, and never more than a cap. `/dev/zero` would otherwise grow
//! without end, a FIFO would block the open until some writer came, and a huge file
//! would be buffered whole before any check could refuse it.

use std::fmt;
use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a user's file was not read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// Opening or reading failed (missing, no permission, ...).
    Io(std::io::Error),
    /// Not a regular file: what it is instead (`a directory`, `a FIFO`, ...).
    NotRegular(&'static str),
    /// More than the cap, bytes.
    TooLarge(u64),
    /// Not UTF-8: where the first invalid byte is (1-based line and column).
    NotUtf8 {
        /// Its line.
        line: usize,
        /// Its column, in bytes.
        column: usize,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::NotRegular(what) => write!(f, "it is {what}, not a regular file"),
            ReadError::TooLarge(cap) => write!(f, "it is larger than {cap} bytes"),
            ReadError::NotUtf8 { line, column } => write!(
                f,
                "not UTF-8 text: invalid byte at line {line}, column {column}"
            ),
        }
    }
}

impl std::error::Error for ReadError {}

/// The bytes of the regular file at `path`, at most `cap` of them.
pub(crate) fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    // Refuse by name first, so that a device is not even opened...
    regular(&std::fs::metadata(path).map_err(ReadError::Io)?)?;
    // ...and again by handle, in case the name changed in between: O_NONBLOCK lets the
    // open of a FIFO return at once (a regular file's reads ignore it).
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(ReadError::Io)?;
    regular(&file.metadata().map_err(ReadError::Io)?)?;
    read_at_most(file, cap)
}

/// [`read_capped`], as UTF-8 text.
pub(crate) fn read_text_capped(path: &Path, cap: u64) -> Result<String, ReadError> {
    String::from_utf8(read_capped(path, cap)?).map_err(|e| {
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = good.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        ReadError::NotUtf8 { line, column }
    })
}

fn regular(m: &Metadata) -> Result<(), ReadError> {
    let t = m.file_type();
    if t.is_file() {
        return Ok(());
    }
    let what = if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "something else"
    };
    Err(ReadError::NotRegular(what))
}

/// Read one byte past the cap at most: a file that grows while it is read (or lies
/// about its size, as `/proc` files do) is refused, never buffered.
fn read_at_most(file: File, cap: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge(cap));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("locksim-user-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn a_file_up_to_the_cap_is_read_and_one_byte_more_is_refused() {
        let p = temp("four.txt", b"four");
        assert_eq!(read_capped(&p, 4).unwrap(), b"four");
        let e = read_capped(&p, 3).unwrap_err();
        assert_eq!(e.to_string(), "it is larger than 3 bytes");
    }

    #[test]
    fn devices_and_directories_are_refused_without_reading() {
        let e = read_capped(Path::new("/dev/zero"), 10).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is a character device, not a regular file"
        );
        let e = read_capped(&std::env::temp_dir(), 10).unwrap_err();
        assert_eq!(e.to_string(), "it is a directory, not a regular file");
    }

    #[test]
    fn invalid_utf8_is_placed_by_line_and_column() {
        let p = temp("latin1.txt", b"ok\nab\xff");
        let e = read_text_capped(&p, 100).unwrap_err();
        assert_eq!(
            e.to_string(),
            "not UTF-8 text: invalid byte at line 2, column 3"
        );
    }
}
