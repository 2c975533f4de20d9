//! Issue 41, finding 1: connections. 20,050 idle or half-sent connections from one client took
//! every file descriptor of `servio serve`, and `/healthz` answered 0 of 5. Now one address
//! holds at most `--max-connections-per-address`, everyone together `--max-connections`, and
//! a connection that sends no complete head within `--header-timeout` (or no body within
//! `--body-timeout`) is closed.
//!
//! The listener does not depend on the database, so these run on the embedded one only.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use servio_demo_site::DemoAuth;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use super::harness::{Backend, Platform, SITE_TOKEN, start_site};

/// A connection to the platform from `from` (another loopback address than the health
/// watch's `127.0.0.1`, so that the attacker's bound is its own).
async fn connect_from(from: &str, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(to).await.unwrap()
}

fn platform_addr(platform: &Platform) -> SocketAddr {
    platform.url.trim_start_matches("http://").parse().unwrap()
}

/// What the platform sends on `connection` before closing it, or `None` when it is still open
/// after `wait`.
async fn answer_before_close(connection: &mut TcpStream, wait: Duration) -> Option<String> {
    let mut answer = Vec::new();
    match tokio::time::timeout(wait, connection.read_to_end(&mut answer)).await {
        Ok(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
        Err(_) => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_holds_its_share_of_connections_and_half_sent_ones_are_closed() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    let args = ["--max-connections-per-address", "50", "--header-timeout", "2", "--body-timeout", "2"];
    let platform = Platform::start(&Backend::Sqlite, &site, &args).await;
    let addr = platform_addr(&platform);
    let watch = platform.watch_health();

    // Fifty half-sent heads and idle connections from one address: all taken, then closed by the
    // header timer.
    let mut held = Vec::new();
    for n in 0..50 {
        let mut connection = connect_from("127.0.0.2", addr).await;
        if n % 2 == 0 {
            connection.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n").await.unwrap();
        }
        held.push(connection);
    }
    // The fifty-first from that address is told why and closed at once, without a request.
    let mut extra = connect_from("127.0.0.2", addr).await;
    let refused = answer_before_close(&mut extra, Duration::from_secs(1)).await;
    let refused = refused.expect("a connection past the address's bound is closed at once");
    assert!(refused.starts_with("HTTP/1.1 429"), "{refused}");
    assert!(refused.contains("50 connections are open from this address"), "{refused}");

    // Another address is served meanwhile (the health watch, from 127.0.0.1).
    let started = Instant::now();
    for connection in &mut held {
        let closed = answer_before_close(connection, Duration::from_secs(6).saturating_sub(started.elapsed())).await;
        assert!(closed.is_some(), "a half-sent or idle connection was still open after {:?}", started.elapsed());
    }
    eprintln!("50 stalled connections closed within {:?}", started.elapsed());

    // Their places are free again: the address is served.
    let mut again = connect_from("127.0.0.2", addr).await;
    again.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").await.unwrap();
    let answer = answer_before_close(&mut again, Duration::from_secs(5)).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // A body sent too slowly is cut off by the body timer.
    let mut slow = connect_from("127.0.0.3", addr).await;
    let head =
        "POST /api/signup HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{";
    slow.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let cut = answer_before_close(&mut slow, Duration::from_secs(6)).await;
    assert!(cut.is_some(), "a body sent too slowly kept its connection for {:?}", started.elapsed());
    watch.assert_healthy("stalled connections").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_total_are_refused_at_once() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    let args = ["--max-connections", "30", "--max-connections-per-address", "20"];
    let platform = Platform::start(&Backend::Sqlite, &site, &args).await;
    let addr = platform_addr(&platform);
    let mut held = Vec::new();
    for from in ["127.0.0.4", "127.0.0.5"] {
        for _ in 0..15 {
            held.push(connect_from(from, addr).await);
        }
    }
    // Let the platform count them all in.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut extra = connect_from("127.0.0.6", addr).await;
    let refused = answer_before_close(&mut extra, Duration::from_secs(1)).await.expect("refused at once");
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("30 connections open"), "{refused}");
    drop(held);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let health = reqwest::get(format!("{}/healthz", platform.url)).await.unwrap();
    assert_eq!(health.status(), 200);
}

#[test]
fn a_limit_the_open_files_cannot_hold_stops_serve_at_start() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_servio"))
        .args(["serve", "--addr", "127.0.0.1:0", "--max-connections", "4000000000"])
        .env("SERVIO_SECRET_KEY", super::harness::KEY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("lower --max-connections or raise the limit"), "{stderr}");
}
