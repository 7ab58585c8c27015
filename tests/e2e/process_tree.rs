//! Processes followed by tree (/proc), never by name: what a command started is what descends
//! from it, and a process is the same one only while its start time is.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One process as /proc/PID/stat shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process {
    pub pid: i32,
    /// Clock ticks after boot: a PID reused by a later process has another.
    started: u64,
}

/// What this module reads of /proc/PID/stat.
struct Stat {
    state: char,
    parent: i32,
    started: u64,
}

fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, in parentheses, may hold spaces and parentheses itself.
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        parent: fields.get(1)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
    })
}

fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .expect("/proc is readable")
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// `root` and every process descending from it now.
pub fn tree(root: i32) -> Vec<Process> {
    let mut children: HashMap<i32, Vec<Process>> = HashMap::new();
    let mut root_process = None;
    for pid in all_pids() {
        let Some(stat) = stat(pid) else { continue };
        let process = Process {
            pid,
            started: stat.started,
        };
        if pid == root {
            root_process = Some(process);
        }
        children.entry(stat.parent).or_default().push(process);
    }
    let mut found: Vec<Process> = root_process.into_iter().collect();
    let mut next = 0;
    while next < found.len() {
        found.extend(children.remove(&found[next].pid).unwrap_or_default());
        next += 1;
    }
    found
}

impl Process {
    /// Still there and not a zombie (a zombie holds no port, file or memory).
    pub fn running(&self) -> bool {
        stat(self.pid).is_some_and(|stat| stat.started == self.started && stat.state != 'Z')
    }

    /// Its PID and command line, for a failure's message.
    pub fn describe(&self) -> String {
        let command = std::fs::read(format!("/proc/{}/cmdline", self.pid))
            .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
            .unwrap_or_default();
        format!("{} {}", self.pid, command.trim_end())
    }
}

/// Makes this process the one that orphans of its descendants are handed to (instead of init),
/// so that a server that leaves its parent stays in this process's tree.
pub fn adopt_orphans() {
    // SAFETY: prctl with integer arguments only.
    let done = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    assert_eq!(
        done,
        0,
        "PR_SET_CHILD_SUBREAPER: {}",
        std::io::Error::last_os_error()
    );
}

/// Sends `signal` to the process group `group`.
pub fn signal_group(group: i32, signal: i32) {
    // SAFETY: kill(2) with integer arguments only.
    unsafe { libc::kill(-group, signal) };
}

/// Collects the exit status of this process's adopted children that ended (a zombie lingers
/// until its parent does: a server's stop that waits for a process to be gone would wait for
/// it), except `keep`, whose status its `Child` handle reads.
pub fn reap_except(keep: &[i32]) {
    for process in tree(std::process::id() as i32) {
        if !keep.contains(&process.pid) && process.pid != std::process::id() as i32 {
            // SAFETY: waitpid on one PID, without blocking; a PID not ours is an error ignored.
            unsafe { libc::waitpid(process.pid, std::ptr::null_mut(), libc::WNOHANG) };
        }
    }
}

/// Waits up to `within` until none of `processes` runs; answers those still running then.
pub fn wait_gone(processes: &[Process], within: Duration, keep: &[i32]) -> Vec<Process> {
    let deadline = Instant::now() + within;
    loop {
        reap_except(keep);
        let running: Vec<Process> = processes.iter().copied().filter(Process::running).collect();
        if running.is_empty() || Instant::now() >= deadline {
            return running;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Kills every descendant of this process (whatever a failed test left running).
pub fn kill_descendants() {
    let me = std::process::id() as i32;
    for process in tree(me).into_iter().filter(|process| process.pid != me) {
        // SAFETY: kill(2) with integer arguments only.
        unsafe { libc::kill(process.pid, libc::SIGKILL) };
    }
    reap_except(&[]);
}
