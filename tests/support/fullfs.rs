//! `SmallFs`: a small tmpfs mounted for one test, which the test fills to make the database's
//! writes fail with "database or disk is full" and then frees again — the real failure, with no
//! fault-injecting layer in between. Mounting needs root (or CAP_SYS_ADMIN); where the machine
//! cannot mount, [`SmallFs::mount`] answers `None` after printing why, and the test says so.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs of a few MiB mounted on a fresh temp directory; unmounted on drop.
pub struct SmallFs {
    dir: tempfile::TempDir,
    ballast: PathBuf,
}

impl SmallFs {
    /// Mounts a tmpfs of `mib` MiB, or `None` (printing why) where the machine cannot.
    pub fn mount(mib: u32) -> Option<SmallFs> {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => {
                let ballast = dir.path().join("ballast");
                Some(SmallFs { dir, ballast })
            }
            Ok(o) => {
                eprintln!(
                    "SKIPPED: this machine cannot mount a tmpfs (needs root): {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("SKIPPED: no `mount` command to make a small filesystem: {e}");
                None
            }
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A `sqlite://` URL of a database file on this filesystem.
    pub fn sqlite_url(&self) -> String {
        format!("sqlite://{}", self.dir.path().join("reagent.db").display())
    }

    /// Fills every free byte with a ballast file (until the write fails with "no space").
    pub fn fill(&self) {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.ballast)
            .unwrap();
        let chunk = vec![0x5a_u8; 4096];
        loop {
            match file.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("filling the test filesystem: {e}"),
            }
        }
        // The last partial pages too: tmpfs refuses at page granularity.
        let _ = file.write(&[0x5a]);
    }

    /// Frees the space the ballast took.
    pub fn free(&self) {
        std::fs::remove_file(&self.ballast).unwrap();
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        // Lazy: a store the test leaked may still hold files open.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}
