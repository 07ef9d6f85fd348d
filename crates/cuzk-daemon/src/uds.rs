//! The Unix-socket listener.
//!
//! - The socket is created with the configured mode whatever the umask: the
//!   socket's inode is restricted before `bind` (Linux creates the file with
//!   that mode masked by the umask, so it is never wider than asked for),
//!   and set exactly right after it.
//! - An existing path is replaced only when it is a socket nobody listens on
//!   (left by a daemon that did not exit cleanly); anything else (a regular
//!   file, a directory, a symbolic link, a live socket) is an error, never
//!   deleted. At exit the socket is removed only if it is still the one this
//!   daemon created.
//! - Clients built on grpc-core (Python, C++, ...) need the channel option
//!   `grpc.default_authority = "localhost"`, or `[daemon] unix_authority_fix`
//!   ([`crate::authority_fix`]).

use anyhow::{bail, Context};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Parses an octal socket mode such as `"0600"` or `"660"`.
pub fn parse_mode(text: &str) -> anyhow::Result<u32> {
    let digits = text.trim();
    let digits = digits.strip_prefix("0o").unwrap_or(digits);
    let mode = u32::from_str_radix(digits, 8)
        .ok()
        .filter(|m| *m <= 0o777)
        .with_context(|| format!("[daemon] socket_mode {text:?} is not an octal mode such as \"0600\""))?;
    if mode & 0o600 != 0o600 {
        bail!("[daemon] socket_mode {text:?} must give the daemon's user read and write (0600)");
    }
    Ok(mode)
}

/// The socket file this daemon created; [`BoundSocket::remove`] deletes it
/// only while it is still that file.
#[derive(Debug)]
pub struct BoundSocket {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl BoundSocket {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the socket file if it is still the one [`bind`] created.
    pub fn remove(&self) {
        if let Ok(meta) = std::fs::symlink_metadata(&self.path) {
            if meta.file_type().is_socket() && meta.dev() == self.dev && meta.ino() == self.ino {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// Checks that a socket can be created at `path`: nothing is there, or a
/// socket nobody listens on (`Ok(true)`: stale, to be removed). Anything
/// else is an error, and is left alone.
pub fn check_path(path: &Path) -> anyhow::Result<bool> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("checking socket path {}", path.display())),
    };
    let kind = meta.file_type();
    if !kind.is_socket() {
        let what = if kind.is_file() {
            "a regular file"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_symlink() {
            "a symbolic link"
        } else {
            "not a socket"
        };
        bail!(
            "{} exists and is {what}, not a socket; refusing to replace it \
             (remove it or choose another [daemon] listen path)",
            path.display()
        );
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        bail!(
            "{} is a socket another process is listening on (another cuzk-daemon?)",
            path.display()
        );
    }
    Ok(true)
}

/// Clears the way for a socket at `path` (see [`check_path`]).
fn clear_stale(path: &Path) -> anyhow::Result<()> {
    if check_path(path)? {
        std::fs::remove_file(path).with_context(|| format!("removing stale socket {}", path.display()))?;
        tracing::info!(socket = %path.display(), "removed a stale socket left by an earlier run");
    }
    Ok(())
}

/// Binds a listening Unix socket at `path` with permissions `mode`.
pub fn bind(path: &Path, mode: u32) -> anyhow::Result<(tokio::net::UnixListener, BoundSocket)> {
    clear_stale(path)?;
    let socket = tokio::net::UnixSocket::new_stream().context("creating a Unix socket")?;
    // Linux gives the socket file the socket inode's mode masked by the
    // umask, so with this the file is never more open than `mode`, not even
    // between bind and the chmod below. Best effort: other systems may refuse.
    if let Ok(fd) = socket.as_fd().try_clone_to_owned() {
        let _ = std::fs::File::from(fd).set_permissions(std::fs::Permissions::from_mode(mode));
    }
    socket
        .bind(path)
        .with_context(|| format!("binding Unix socket {}", path.display()))?;
    let bound = (|| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        let meta = std::fs::symlink_metadata(path)?;
        Ok::<_, io::Error>(BoundSocket {
            path: path.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
        })
    })();
    let bound = match bound {
        Ok(bound) => bound,
        Err(e) => {
            let _ = std::fs::remove_file(path);
            return Err(e).with_context(|| format!("setting the mode of {}", path.display()));
        }
    };
    let listener = match socket.listen(1024) {
        Ok(listener) => listener,
        Err(e) => {
            bound.remove();
            return Err(e).with_context(|| format!("listening on {}", path.display()));
        }
    };
    Ok((listener, bound))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_modes_parse() {
        assert_eq!(parse_mode("0600").unwrap(), 0o600);
        assert_eq!(parse_mode("660").unwrap(), 0o660);
        assert_eq!(parse_mode("0o640").unwrap(), 0o640);
        assert!(parse_mode("0400").is_err());
        assert!(parse_mode("rw").is_err());
        assert!(parse_mode("01777").is_err());
    }
}
