//! A replica's lines from the Docker Engine (contract section 12, "Logs"), through the fluentd
//! log driver of each agent's container: the Engine sends every line as it is written, with its
//! nanosecond time, over the Forward protocol (msgpack) to a unix socket of the data plane's.
//!
//! Following the json-file driver's files instead loses lines: they rotate away under a reader
//! that falls behind, and Docker 20.10's follow then skips whole files and gives others twice
//! (a 50 MB flood: half its lines never read, a sixth read twice). Here nothing rotates, and
//! the driver sends synchronously: a line is written to the socket before the container's next
//! one is taken, so none waits in a buffer that the container's stop would drop (the driver's
//! asynchronous mode lost the last 2,000 lines of a 20,000-line flood that way). The reading
//! here never waits on the delivery of the lines (the shipper buffers and bounds them), so the
//! agent is slowed only by a flood's reading, never by the logs table. While the data plane
//! restarts the driver retries, and the agent's writes wait (a second or two); the next data
//! plane listens on the same socket and takes them. The socket is a file of the host's, out of
//! every replica's reach.
//!
//! Each container's lines wait in an inbox of their own until the data plane follows it
//! ([`Lines::take`]); its stream ends when the Engine closes the container's logger (the
//! container stopped). A container no one follows (a stray, about to be stopped) does not
//! hold its driver for longer than [`UNFOLLOWED_WAIT`].

use std::collections::{HashMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bollard::models::HostConfigLogConfig;
use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::engine::LogLine;
use message::{Decoded, Message, decode};

mod message;

/// Lines an inbox holds before the driver's connection waits for its follower.
const INBOX_LINES: usize = 4096;
/// How long a connection waits for room in an inbox no one reads before it drops the line.
pub const UNFOLLOWED_WAIT: Duration = Duration::from_secs(5);
/// The largest Forward message taken (a line is at most 16 KiB: the Engine splits longer ones).
const MAX_MESSAGE_BYTES: usize = 1024 * 1024;
/// Inboxes of containers that stopped before anyone followed them, kept for a late follower.
const UNFOLLOWED_KEPT: usize = 64;

/// The log configuration of an agent's container: every line to the socket at `socket`.
pub fn log_config(socket: &Path) -> HostConfigLogConfig {
    let options = [
        ("fluentd-address", format!("unix://{}", socket.display())),
        ("fluentd-async", "false".to_owned()),
        // Retries from 100 ms, growing: a restarted data plane is back within a second.
        ("fluentd-retry-wait", "100ms".to_owned()),
        ("fluentd-sub-second-precision", "true".to_owned()),
        ("tag", "{{.ID}}".to_owned()),
    ];
    HostConfigLogConfig {
        typ: Some("fluentd".to_owned()),
        config: Some(
            options
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value))
                .collect(),
        ),
    }
}

/// The receiving end of every agent container's log driver.
pub struct Forward {
    socket: PathBuf,
    inboxes: Lines,
    listening: JoinHandle<()>,
}

/// The containers' inboxes, shared by the connections and the followers.
#[derive(Clone, Default)]
pub struct Lines(Arc<Mutex<Inboxes>>);

#[derive(Default)]
struct Inboxes {
    by_container: HashMap<String, Inbox>,
    /// Containers whose logger closed before they were followed, oldest first.
    unfollowed: VecDeque<String>,
}

struct Inbox {
    /// `None` once the container's logger closed: the stream ends when it is drained.
    sender: Option<mpsc::Sender<LogLine>>,
    /// `None` once taken by its follower.
    receiver: Option<mpsc::Receiver<LogLine>>,
}

impl Inbox {
    fn new() -> Self {
        let (sender, receiver) = mpsc::channel(INBOX_LINES);
        Inbox {
            sender: Some(sender),
            receiver: Some(receiver),
        }
    }

    /// A follower that went (its data plane halted) leaves the lines from now on to the next.
    fn renew_if_unfollowed(&mut self) {
        if self.receiver.is_none() && self.sender.as_ref().is_some_and(|s| s.is_closed()) {
            let (sender, receiver) = mpsc::channel(INBOX_LINES);
            (self.sender, self.receiver) = (Some(sender), Some(receiver));
        }
    }
}

impl Inboxes {
    /// The sender of `container`'s inbox, made if new; `None` once its logger closed.
    fn sender(&mut self, container: &str) -> Option<mpsc::Sender<LogLine>> {
        let inbox = (self.by_container)
            .entry(container.to_owned())
            .or_insert_with(Inbox::new);
        inbox.renew_if_unfollowed();
        inbox.sender.clone()
    }

    /// The container's logger closed: its stream ends once drained. An inbox no one took is
    /// kept for a late follower, a few at most.
    fn close(&mut self, container: &str) {
        let Some(inbox) = self.by_container.get_mut(container) else {
            return;
        };
        inbox.sender = None;
        if inbox.receiver.is_none() {
            self.by_container.remove(container);
            return;
        }
        self.unfollowed.push_back(container.to_owned());
        while self.unfollowed.len() > UNFOLLOWED_KEPT {
            if let Some(oldest) = self.unfollowed.pop_front() {
                self.by_container.remove(&oldest);
            }
        }
    }
}

impl Forward {
    /// Listens on `socket` (a stale socket file there, a data plane's before a restart, is
    /// replaced: the Engine's drivers then reconnect to this one).
    pub fn listen(socket: impl Into<PathBuf>) -> io::Result<Self> {
        let socket = socket.into();
        match std::fs::remove_file(&socket) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        let listener = UnixListener::bind(&socket)?;
        let inboxes = Lines::default();
        let listening = tokio::spawn(accept(listener, inboxes.clone()));
        tracing::info!(socket = %socket.display(), "receiving the replicas' lines");
        Ok(Forward {
            socket,
            inboxes,
            listening,
        })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The inboxes, for a follower.
    pub fn lines(&self) -> Lines {
        self.inboxes.clone()
    }
}

impl Lines {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inboxes> {
        // Each change under the lock is one insert or removal: a panic leaves it consistent.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The lines of `container` not taken yet, from its start, until its logger closes; `None`
    /// while another follows them. A follower gone (a data plane halted) leaves the lines from
    /// then on to the next one.
    pub fn take(&self, container: &str) -> Option<mpsc::Receiver<LogLine>> {
        let mut inboxes = self.lock();
        let inbox = (inboxes.by_container)
            .entry(container.to_owned())
            .or_insert_with(Inbox::new);
        inbox.renew_if_unfollowed();
        let receiver = inbox.receiver.take();
        if inbox.sender.is_none() {
            inboxes.by_container.remove(container);
            inboxes.unfollowed.retain(|id| id != container);
        }
        receiver
    }

    /// The container is gone: a stream no logger will ever close (a container that wrote
    /// nothing, or none at all) ends.
    pub fn close(&self, container: &str) {
        self.lock().close(container);
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.listening.abort();
        let _ = std::fs::remove_file(&self.socket);
    }
}

async fn accept(listener: UnixListener, inboxes: Lines) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(connection(stream, inboxes.clone()));
            }
            Err(error) => {
                tracing::warn!(%error, "accepting a log driver's connection failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// One logger's connection (Docker opens one per container): its messages decoded as they
/// come, each line to its container's inbox.
async fn connection(mut stream: UnixStream, inboxes: Lines) {
    let mut buffer = BytesMut::with_capacity(64 * 1024);
    let mut senders: HashMap<String, mpsc::Sender<LogLine>> = HashMap::new();
    'reading: loop {
        loop {
            match decode(&buffer) {
                Decoded::Value(value, used) => {
                    buffer.advance(used);
                    let message = Message::of(value);
                    if let Some(chunk) = message.ack()
                        && let Err(error) = stream.write_all(&chunk).await
                    {
                        tracing::warn!(%error, "acknowledging a log message failed");
                        break 'reading;
                    }
                    for (container, line) in message.lines() {
                        deliver(&inboxes, &mut senders, container, line).await;
                    }
                }
                Decoded::Incomplete => break,
                Decoded::Invalid(error) => {
                    tracing::warn!(%error, "a log driver sent what is not the Forward protocol");
                    break 'reading;
                }
            }
        }
        if buffer.len() > MAX_MESSAGE_BYTES {
            tracing::warn!(bytes = buffer.len(), "a log message past its bound");
            break;
        }
        match stream.read_buf(&mut buffer).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "reading a log driver's connection failed");
                break;
            }
        }
    }
    let mut inboxes = inboxes.lock();
    for container in senders.keys() {
        inboxes.close(container);
    }
}

/// Puts a line into its container's inbox. A follower gone is replaced by the next one to take
/// the inbox (or its line dropped: no one follows); an inbox no one reads is waited on for
/// [`UNFOLLOWED_WAIT`] at most, so that the driver, and the container's stop, never wait on it
/// for ever.
async fn deliver(
    inboxes: &Lines,
    senders: &mut HashMap<String, mpsc::Sender<LogLine>>,
    container: String,
    line: LogLine,
) {
    let sender = match senders.get(&container) {
        Some(sender) if !sender.is_closed() => sender.clone(),
        _ => match inboxes.lock().sender(&container) {
            Some(sender) => {
                senders.insert(container.clone(), sender.clone());
                sender
            }
            None => return,
        },
    };
    match sender.send_timeout(line, UNFOLLOWED_WAIT).await {
        Ok(()) => {}
        Err(mpsc::error::SendTimeoutError::Timeout(_)) => {
            tracing::warn!(%container, "a replica's line dropped: no one follows its lines");
        }
        // Its follower went since: the next one takes the lines from now on.
        Err(mpsc::error::SendTimeoutError::Closed(_)) => {}
    }
}
