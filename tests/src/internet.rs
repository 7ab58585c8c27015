//! A stand-in for the internet, for the tests of what a replica reaches (no outside network is
//! reachable here): a network namespace of its own behind a veth pair, routed from the host,
//! with an HTTP server on a documentation address (TEST-NET-3, RFC 5737). When nothing answers
//! the host at the cloud metadata address 169.254.169.254, it answers there too, so that a
//! replica's probe of that address means something. Everything it made (servers, namespace,
//! route) is removed when it is dropped. It needs root, as the stacks' Docker Engine does.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where the stand-in's server answers.
pub const ADDRESS: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);
/// The host's side of the link.
const HOST_SIDE: &str = "203.0.113.254/24";
/// The cloud metadata service's address.
pub const METADATA: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);
/// The port both servers answer on.
pub const PORT: u16 = 80;

/// The internet's stand-in, up.
pub struct Internet {
    namespace: String,
    veth: String,
    servers: Vec<Child>,
    metadata_route: bool,
}

fn run(args: &[&str]) -> Result<(), String> {
    let output = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|error| format!("{args:?}: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Whether a TCP connection to `address` is accepted within `within`.
pub fn answers(address: SocketAddr, within: Duration) -> bool {
    TcpStream::connect_timeout(&address, within).is_ok()
}

impl Internet {
    /// Makes the namespace, its link and its servers; panics saying what failed.
    pub fn start() -> Self {
        let id = std::process::id() % 100_000;
        let mut internet = Internet {
            namespace: format!("ah-internet-{id}"),
            // Never `ahb…`: that prefix is the namespace bridges' (scripts/firewall.sh).
            veth: format!("ahi{id}"),
            servers: Vec::new(),
            metadata_route: false,
        };
        if let Err(error) = internet.link() {
            panic!("the internet's stand-in could not be made: {error}");
        }
        let serve_metadata = !answers(SocketAddr::from((METADATA, PORT)), Duration::from_secs(1));
        if serve_metadata {
            internet.metadata().expect("the metadata address served");
        }
        let mut addresses = vec![ADDRESS];
        if serve_metadata {
            addresses.push(METADATA);
        }
        for address in addresses {
            let server = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &internet.namespace,
                    "python3",
                    "-m",
                    "http.server",
                ])
                .args([&PORT.to_string(), "--bind", &address.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("python3's http.server in the namespace");
            internet.servers.push(server);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while !answers(
            SocketAddr::from((ADDRESS, PORT)),
            Duration::from_millis(500),
        ) {
            assert!(
                Instant::now() < deadline,
                "the stand-in's server answers the host"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        internet
    }

    fn link(&self) -> Result<(), String> {
        let (ns, veth) = (self.namespace.as_str(), self.veth.as_str());
        let inside = format!("{veth}i");
        run(&["ip", "netns", "add", ns])?;
        run(&[
            "ip", "link", "add", veth, "type", "veth", "peer", "name", &inside,
        ])?;
        run(&["ip", "link", "set", &inside, "netns", ns])?;
        run(&["ip", "addr", "add", HOST_SIDE, "dev", veth])?;
        run(&["ip", "link", "set", veth, "up"])?;
        let address = format!("{ADDRESS}/24");
        run(&["ip", "-n", ns, "addr", "add", &address, "dev", &inside])?;
        run(&["ip", "-n", ns, "link", "set", &inside, "up"])?;
        run(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
        let gateway = HOST_SIDE.split('/').next().unwrap_or_default();
        run(&["ip", "-n", ns, "route", "add", "default", "via", gateway])
    }

    /// 169.254.169.254 inside the namespace, routed there from the host.
    fn metadata(&mut self) -> Result<(), String> {
        let metadata = format!("{METADATA}/32");
        run(&[
            "ip",
            "-n",
            &self.namespace,
            "addr",
            "add",
            &metadata,
            "dev",
            "lo",
        ])?;
        run(&["ip", "route", "add", &metadata, "via", &ADDRESS.to_string()])?;
        self.metadata_route = true;
        Ok(())
    }
}

impl Drop for Internet {
    fn drop(&mut self) {
        for server in &mut self.servers {
            let _ = server.kill();
            let _ = server.wait();
        }
        if self.metadata_route {
            let _ = run(&["ip", "route", "del", &format!("{METADATA}/32")]);
        }
        // The veth's other end goes with the namespace.
        let _ = run(&["ip", "link", "del", &self.veth]);
        let _ = run(&["ip", "netns", "del", &self.namespace]);
    }
}
