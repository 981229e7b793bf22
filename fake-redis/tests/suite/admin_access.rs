//! Who may run the `FAKE.*` admin commands: with an admin password only the connections that sent
//! `FAKE.AUTH` with it; without one every client of a loopback server, and nobody on any other
//! address. Connections are in-memory pipes, so the servers bind nothing.

use crate::support::pipe::{ask, connect};
use bytes::Bytes;
use fake_redis::server::{Server, ServerConfig};
use std::net::{IpAddr, Ipv4Addr};

#[tokio::test]
async fn an_admin_password_guards_every_fake_command_per_connection() {
    let server = Server::new(&ServerConfig {
        admin_password: Some(Bytes::from_static(b"adm")),
        ..ServerConfig::default()
    });
    let mut admin = connect(&server);
    let mut other = connect(&server);
    let refused = "-NOPERM FAKE.* commands need FAKE.AUTH <admin-password> on this connection";
    assert_eq!(
        ask(&mut admin, "FAKE.FAULT DROP-REPLY * CHANCE 1").await,
        refused
    );
    assert_eq!(ask(&mut admin, "FAKE.TIME").await, refused);
    assert_eq!(
        ask(&mut admin, "FAKE.AUTH nope").await,
        "-WRONGPASS invalid admin password"
    );
    assert_eq!(ask(&mut admin, "FAKE.AUTH adm").await, "+OK");
    assert!(ask(&mut admin, "FAKE.TIME").await.starts_with(':'));
    // Ordinary commands need nothing more.
    assert_eq!(ask(&mut other, "PING").await, "+PONG");
    assert_eq!(ask(&mut other, "FAKE.NODE").await, refused);
    assert_eq!(ask(&mut other, "FAKE.FAULT CLEAR").await, refused);
}

#[tokio::test]
async fn without_a_password_the_commands_are_open_on_loopback_only() {
    let open = Server::new(&ServerConfig::default());
    let mut conn = connect(&open);
    assert!(ask(&mut conn, "FAKE.TIME").await.starts_with(':'));
    assert_eq!(
        ask(&mut conn, "FAKE.AUTH x").await,
        "-ERR FAKE.AUTH called without any admin password configured"
    );
    let exposed = Server::new(&ServerConfig {
        bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        ..ServerConfig::default()
    });
    let mut conn = connect(&exposed);
    assert_eq!(
        ask(&mut conn, "FAKE.FAULT DROP-REPLY * CHANCE 1").await,
        "-NOPERM FAKE.* commands are refused: the server listens beyond loopback without \
         --admin-password"
    );
    assert_eq!(ask(&mut conn, "PING").await, "+PONG");
}
