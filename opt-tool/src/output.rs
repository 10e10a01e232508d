//! The IR output written as the printer goes (issue 14: the printed text of
//! a large module never exists as one string).
//!
//! Into a file, the text goes to a temporary file next to it that is renamed
//! into place only when everything is written ([`StreamedOutput::commit`]), so
//! a failure never leaves a half-written output file. The file is created at
//! the first write, after the passes succeeded.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// `-o FILE` or standard output (`None`, or `-`).
pub(crate) struct StreamedOutput {
    dest: Option<PathBuf>,
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
            file: None,
            broken_pipe: false,
            stdout: None,
        }
    }

    fn tmp(dest: &Path) -> PathBuf {
        dest.with_extension("l0tmp")
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
        if let (Some(dest), Some(file)) = (self.dest.clone(), self.file.take()) {
            drop(file);
            if let Err(e) = std::fs::rename(Self::tmp(&dest), &dest) {
                let msg = self.describe(&e);
                let _ = std::fs::remove_file(Self::tmp(&dest));
                return Err(msg);
            }
        }
        Ok(())
    }

    /// Drops the output: removes the temporary file, if one was made.
    pub(crate) fn abandon(mut self) {
        if let (Some(dest), Some(file)) = (self.dest.clone(), self.file.take()) {
            drop(file);
            let _ = std::fs::remove_file(Self::tmp(&dest));
        }
    }
}

impl Write for StreamedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &self.dest {
            Some(dest) => {
                if self.file.is_none() {
                    self.file = Some(BufWriter::with_capacity(
                        1 << 16,
                        File::create(Self::tmp(dest))?,
                    ));
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
