//! The IR output written as the printer goes (issue 14: the printed text of
//! a large module never exists as one string).
//!
//! Into a file, the text goes to a temporary file next to it that is renamed
//! into place only when everything is written ([`StreamedOutput::commit`]), so
//! a failure never leaves a half-written output file. The file is created at
//! the first write, after the passes succeeded. A destination that exists and
//! is not a regular file (`/dev/null`, a FIFO) is written in place, and one
//! that is a symbolic link to a file gets the new file at the link's target
//! ([`Target`]).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Where an output file is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// Written to `tmp`, then renamed onto `into`: the destination, or the
    /// file that a symbolic link at the destination points to (so the link
    /// stays a link).
    Staged { tmp: PathBuf, into: PathBuf },
    /// Written in place: the destination exists and is not a regular file
    /// (a device or a FIFO), which a rename would replace.
    Direct(PathBuf),
}

impl Target {
    /// The target for destination `dest`.
    pub(crate) fn of(dest: &Path) -> Target {
        match std::fs::metadata(dest) {
            Ok(m) if !m.is_file() => Target::Direct(dest.to_path_buf()),
            Ok(_) => {
                let into = std::fs::canonicalize(dest).unwrap_or_else(|_| dest.to_path_buf());
                Target::Staged {
                    tmp: into.with_extension("l0tmp"),
                    into,
                }
            }
            Err(_) => Target::Staged {
                tmp: dest.with_extension("l0tmp"),
                into: dest.to_path_buf(),
            },
        }
    }
    /// The file to create and write.
    fn path(&self) -> &Path {
        match self {
            Target::Staged { tmp, .. } => tmp,
            Target::Direct(p) => p,
        }
    }
    /// Moves a written file into place.
    fn finish(&self) -> std::io::Result<()> {
        match self {
            Target::Staged { tmp, into } => std::fs::rename(tmp, into).inspect_err(|_| {
                let _ = std::fs::remove_file(tmp);
            }),
            Target::Direct(_) => Ok(()),
        }
    }
    /// Removes a partly written temporary file.
    fn discard(&self) {
        if let Target::Staged { tmp, .. } = self {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Writes `data` to `dest` as a whole ([`Target`]): never a half-written
/// file, never a device replaced by a file.
pub(crate) fn write_file(dest: &Path, data: &[u8]) -> std::io::Result<()> {
    write_whole(dest, |p| std::fs::write(p, data), |e| e)
}

/// Writes `dest` as a whole ([`Target`]): `write` creates and fills the
/// file at the path it is given, which then moves into place (`finished`
/// describes a failure to), or goes on an error.
pub(crate) fn write_whole<E>(
    dest: &Path,
    write: impl FnOnce(&Path) -> Result<(), E>,
    finished: impl FnOnce(std::io::Error) -> E,
) -> Result<(), E> {
    let t = Target::of(dest);
    match write(t.path()) {
        Ok(()) => t.finish().map_err(finished),
        Err(e) => {
            t.discard();
            Err(e)
        }
    }
}

/// `-o FILE` or standard output (`None`, or `-`).
pub(crate) struct StreamedOutput {
    dest: Option<PathBuf>,
    /// Where the file is being written, once it is created.
    target: Option<Target>,
    file: Option<BufWriter<File>>,
    /// Standard output was closed by the reader: the rest is dropped, as a
    /// whole-string write would drop it.
    broken_pipe: bool,
    stdout: Option<BufWriter<std::io::StdoutLock<'static>>>,
}

impl StreamedOutput {
    pub(crate) fn new(dest: Option<&Path>) -> StreamedOutput {
        StreamedOutput {
            dest: dest.filter(|p| *p != Path::new("-")).map(Path::to_path_buf),
            target: None,
            file: None,
            broken_pipe: false,
            stdout: None,
        }
    }

    /// The error message for a failed write.
    pub(crate) fn describe(&self, e: &std::io::Error) -> String {
        match &self.dest {
            Some(p) => format!("cannot write '{}': {e}", p.display()),
            None => format!("cannot write output: {e}"),
        }
    }

    /// Finishes the output: flushes it and moves the file into place.
    pub(crate) fn commit(mut self) -> Result<(), String> {
        let res = self.flush();
        if let Err(e) = res {
            let msg = self.describe(&e);
            self.abandon();
            return Err(msg);
        }
        if let (Some(t), Some(file)) = (self.target.clone(), self.file.take()) {
            drop(file);
            if let Err(e) = t.finish() {
                return Err(self.describe(&e));
            }
        }
        Ok(())
    }

    /// Drops the output: removes the temporary file, if one was made.
    pub(crate) fn abandon(mut self) {
        if let (Some(t), Some(file)) = (self.target.take(), self.file.take()) {
            drop(file);
            t.discard();
        }
    }
}

impl Write for StreamedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &self.dest {
            Some(dest) => {
                if self.file.is_none() {
                    let t = Target::of(dest);
                    self.file = Some(BufWriter::with_capacity(1 << 16, File::create(t.path())?));
                    self.target = Some(t);
                }
                self.file.as_mut().map_or(Ok(buf.len()), |f| f.write(buf))
            }
            None if self.broken_pipe => Ok(buf.len()),
            None => {
                let out = self.stdout.get_or_insert_with(|| {
                    BufWriter::with_capacity(1 << 16, std::io::stdout().lock())
                });
                match out.write(buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                        self.broken_pipe = true;
                        Ok(buf.len())
                    }
                    r => r,
                }
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if let Some(f) = self.file.as_mut() {
            f.flush()?;
        }
        if let Some(out) = self.stdout.as_mut() {
            match out.flush() {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => self.broken_pipe = true,
                r => r?,
            }
        }
        Ok(())
    }
}
