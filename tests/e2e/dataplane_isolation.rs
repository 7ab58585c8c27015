//! A replica is a stranger's code (contract sections 12 and 14; a module of
//! tests/e2e/dataplane.rs): from inside account A's replica, nothing of the platform answers
//! (every TCP port the host listens on, on every address the host has: DynamoDB Local, moto's
//! KMS, Secrets Manager and Cognito, the gateway, the functions), nor the cloud's metadata
//! address, nor another replica's agent or holder (of A's own namespace or B's), while the
//! internet's stand-in does: a broken network cannot pass for an isolated one. And it runs
//! without the capabilities an agent does not need (raw sockets, device nodes…).

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::Duration;

use integration_tests::internet::{self, Internet, answers};
use integration_tests::stack::Stack;
use serde_json::{Value, json};
use shared::auth::{ApiKey, Principal};

use crate::dataplane_support::{docker, example_image, inspect, ready_replica, shared_data_plane};

/// The capabilities an agent keeps (dataplane/src/replica.rs, DROPPED_CAPABILITIES): CHOWN 0,
/// DAC_OVERRIDE 1, FOWNER 3, FSETID 4, KILL 5, SETGID 6, SETUID 7, SETPCAP 8,
/// NET_BIND_SERVICE 10.
const KEPT_CAPABILITIES: [u32; 9] = [0, 1, 3, 4, 5, 6, 7, 8, 10];
const NET_RAW: u32 = 13;
const MKNOD: u32 = 27;

/// What a replica's probe tries, each with a 2 s connect: one line `address open|closed` each.
const PROBE: &str = r#"
import socket, sys, threading
results = {}
def probe(target):
    host, port = target.rsplit(":", 1)
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((host, int(port)))
        results[target] = "open"
    except OSError:
        results[target] = "closed"
    finally:
        s.close()
threads = [threading.Thread(target=probe, args=(t,)) for t in sys.argv[1:]]
for t in threads: t.start()
for t in threads: t.join()
for target in sys.argv[1:]:
    print(target, results[target])
"#;

/// The replica's network address and its namespace bridge's gateway (the host's address there).
fn addresses(agent_container: &str) -> (Ipv4Addr, Ipv4Addr) {
    let agent = inspect(agent_container);
    let holder = agent["Config"]["Labels"]["agent-hosting.holderId"]
        .as_str()
        .expect("the agent's container names its holder")
        .to_owned();
    let networks = inspect(&holder)["NetworkSettings"]["Networks"].clone();
    let network = networks
        .as_object()
        .and_then(|networks| networks.values().next())
        .expect("the holder is on its namespace's network");
    let ip = |name: &str| -> Ipv4Addr {
        network[name]
            .as_str()
            .and_then(|text| text.parse().ok())
            .unwrap_or_else(|| panic!("{name} of {network}"))
    };
    (ip("IPAddress"), ip("Gateway"))
}

/// Every IPv4 address of the host's but loopback's.
fn host_addresses() -> BTreeSet<Ipv4Addr> {
    let output = Command::new("ip")
        .args(["-4", "-o", "addr", "show"])
        .output()
        .expect("ip runs");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(3))
        .filter_map(|cidr| cidr.split('/').next()?.parse::<Ipv4Addr>().ok())
        .filter(|address| !address.is_loopback())
        .collect()
}

/// Every TCP port the host listens on (any address, IPv4 or IPv6: a Java server such as
/// DynamoDB Local listens on IPv6's any address, which takes IPv4 too), with where the host
/// itself reaches it over IPv4. A port only IPv6's loopback listens on is out of an IPv4
/// replica's reach and left out.
fn host_listeners() -> Vec<SocketAddr> {
    let output = Command::new("ss")
        .args(["-ltnH"])
        .output()
        .expect("ss runs");
    let mut listeners: Vec<SocketAddr> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(3))
        .filter_map(|local| {
            let (address, port) = local.rsplit_once(':')?;
            let port: u16 = port.parse().ok()?;
            let address = address.split('%').next()?;
            let address = match address {
                "0.0.0.0" | "*" | "[::]" => Ipv4Addr::LOCALHOST,
                other => match other.strip_prefix("[::ffff:") {
                    Some(mapped) => mapped.strip_suffix(']')?.parse().ok()?,
                    None => other.parse().ok()?,
                },
            };
            Some(SocketAddr::from((address, port)))
        })
        .collect();
    listeners.sort_by_key(|listener| (listener.port(), listener.ip()));
    listeners.dedup_by_key(|listener| listener.port());
    listeners
}

/// The port of a `http://host:port...` address in the stack's environment.
fn port_of(variable: &str) -> u16 {
    let url =
        std::env::var(variable).unwrap_or_else(|_| panic!("{variable}: the stack exports it"));
    let rest = url.split("://").nth(1).unwrap_or(&url);
    let authority = rest.split('/').next().unwrap_or(rest);
    authority
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or_else(|| panic!("{variable}={url} names a port"))
}

/// Runs the probe in `container` (the example agent has python3); each target's verdict.
fn probe(container: &str, targets: &[SocketAddr]) -> Vec<(SocketAddr, bool)> {
    let mut args = vec!["exec", container, "python3", "-c", PROBE];
    let texts: Vec<String> = targets.iter().map(ToString::to_string).collect();
    args.extend(texts.iter().map(String::as_str));
    docker(&args)
        .lines()
        .filter_map(|line| {
            let (target, verdict) = line.split_once(' ')?;
            Some((target.parse().ok()?, verdict == "open"))
        })
        .collect()
}

/// A ready agent of one replica in the account; its agent container's id.
async fn replica_of(stack: &Stack, account: &(Principal, ApiKey), name: &str) -> String {
    let (caller, key) = account;
    let body = json!({"serviceName": name, "image": example_image(),
                      "autoScaling": {"minAgents": 1, "maxAgents": 1}});
    ready_replica(stack, key, &caller.namespace, &body).await
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn a_replica_reaches_the_internet_and_nothing_of_the_platform_nor_another_replica() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let internet = Internet::start();
    let a = stack.account("isolation-a").await;
    let prober = replica_of(&stack, &a, "prober").await;
    let neighbour = replica_of(&stack, &a, "neighbour").await;
    let b = stack.account("isolation-b").await;
    let stranger = replica_of(&stack, &b, "stranger").await;
    let namespace = &a.0.namespace;
    let (_, gateway) = addresses(&prober);

    // The platform: every port the host listens on, on each of its addresses, the namespace
    // bridge's gateway among them. The stack's own services are among the listeners, and the
    // host reaches each of them (they are there to be reached).
    let listeners = host_listeners();
    for variable in [
        "DYNAMODB_ENDPOINT",
        "KMS_ENDPOINT",
        "STACK_API_URL",
        "STACK_LAMBDA_URL",
    ] {
        let port = port_of(variable);
        let listener = listeners.iter().find(|listener| listener.port() == port);
        let listener = listener
            .unwrap_or_else(|| panic!("{variable}'s port {port} is listened on: {listeners:?}"));
        assert!(
            answers(*listener, Duration::from_secs(2)),
            "the host reaches {variable} at {listener}"
        );
    }
    let mut host = host_addresses();
    host.insert(gateway);
    let mut platform: Vec<SocketAddr> = Vec::new();
    for listener in &listeners {
        for address in &host {
            platform.push(SocketAddr::from((*address, listener.port())));
        }
    }
    // Other replicas, of A's namespace and of B's: each agent and each holder.
    let mut replicas = Vec::new();
    for other in [&neighbour, &stranger] {
        let (ip, _) = addresses(other);
        for port in [8080, 18080] {
            let target = SocketAddr::from((ip, port));
            assert!(
                answers(target, Duration::from_secs(2)),
                "the host reaches {target}"
            );
            replicas.push(target);
        }
    }
    let metadata = SocketAddr::from((internet::METADATA, internet::PORT));
    assert!(
        answers(metadata, Duration::from_secs(2)),
        "the host reaches {metadata}"
    );
    let outside = SocketAddr::from((internet::ADDRESS, internet::PORT));

    let mut targets = vec![outside, metadata];
    targets.extend(&replicas);
    targets.extend(&platform);
    let verdicts = probe(&prober, &targets);
    assert_eq!(
        verdicts.len(),
        targets.len(),
        "a verdict for each: {verdicts:?}"
    );
    let open: Vec<SocketAddr> = (verdicts.iter())
        .filter(|(_, open)| *open)
        .map(|(target, _)| *target)
        .collect();
    assert_eq!(
        open,
        vec![outside],
        "from {namespace}'s replica only the internet answers (the platform, the metadata address \
         and other replicas must not): {verdicts:?}"
    );
    drop(internet);
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn a_replica_runs_without_raw_sockets_device_nodes_or_any_capability_it_does_not_need() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let account = stack.account("capabilities").await;
    let replica = replica_of(&stack, &account, "capabilities").await;
    let status = docker(&["exec", &replica, "cat", "/proc/self/status"]);
    let bounding = status
        .lines()
        .find_map(|line| line.strip_prefix("CapBnd:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .expect("CapBnd in /proc/self/status");
    let held: Vec<u32> = (0..64).filter(|bit| bounding & (1 << bit) != 0).collect();
    assert_eq!(held, KEPT_CAPABILITIES, "the capabilities a replica keeps");
    assert!(!held.contains(&NET_RAW) && !held.contains(&MKNOD));
    // What NET_RAW would allow: a packet socket, to forge a neighbour's ARP.
    let raw = "import socket\ntry:\n    socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n    \
               print('opened')\nexcept PermissionError:\n    print('refused')";
    let said = docker(&["exec", &replica, "python3", "-c", raw]);
    assert_eq!(said.trim(), "refused", "a raw packet socket");
    let host = &inspect(&replica)["HostConfig"];
    let dropped: Value = host["CapDrop"].clone();
    assert!(dropped.to_string().contains("NET_RAW"), "{dropped}");
}
