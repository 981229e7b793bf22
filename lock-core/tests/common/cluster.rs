//! The shared cluster `scripts/test` starts: a client on it, and its shape from `CLUSTER NODES`.

use lock_core::{ClusterBackend, LockClient, LockConfig};
use std::time::Duration;

/// The node URLs of the shared cluster: `scripts/test`'s, or this test process's own.
pub fn cluster_urls() -> Vec<String> {
    super::servers::cluster_urls()
}

/// A client on the cluster, with an 800 ms response timeout.
pub async fn client(config: LockConfig) -> LockClient {
    let backend = ClusterBackend::connect(&cluster_urls(), Duration::from_millis(800))
        .await
        .expect("connect to REDIS_CLUSTER_URLS");
    LockClient::new(backend, config).unwrap()
}

/// One line of `CLUSTER NODES`.
#[derive(Debug, Clone)]
pub struct Node {
    pub id: String,
    pub addr: String,
    pub primary: bool,
    pub primary_id: String,
    pub ranges: Vec<(u16, u16)>,
}

async fn query(addr: &str, args: &[&str]) -> redis::RedisResult<redis::Value> {
    let client = redis::Client::open(format!("redis://{addr}/"))?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query_async(&mut conn).await
}

/// Every node, as the first node of the cluster sees them.
pub async fn nodes() -> Vec<Node> {
    let first = cluster_urls()[0]
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .to_owned();
    let text: String =
        redis::from_redis_value(query(&first, &["CLUSTER", "NODES"]).await.unwrap()).unwrap();
    text.lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            let ranges = f[8..]
                .iter()
                .filter(|s| !s.starts_with('['))
                .map(|s| match s.split_once('-') {
                    Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                    None => (s.parse().unwrap(), s.parse().unwrap()),
                })
                .collect();
            Node {
                id: f[0].to_owned(),
                addr: f[1].split('@').next().unwrap().to_owned(),
                primary: f[2].contains("master"),
                primary_id: f[3].to_owned(),
                ranges,
            }
        })
        .collect()
}

/// The primary serving `slot`, and its replica.
pub async fn shard_of(slot: u16) -> (Node, Node) {
    let all = nodes().await;
    let primary = all
        .iter()
        .find(|n| n.primary && n.ranges.iter().any(|&(a, b)| (a..=b).contains(&slot)))
        .unwrap_or_else(|| panic!("no primary serves slot {slot}: {all:?}"))
        .clone();
    let replica = all
        .iter()
        .find(|n| !n.primary && n.primary_id == primary.id)
        .unwrap_or_else(|| panic!("the primary of slot {slot} has no replica: {all:?}"))
        .clone();
    (primary, replica)
}
