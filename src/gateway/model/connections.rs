//! How each agent reaches the gateway (REST or MCP, and the MCP client it named), in memory only:
//! the supervisor sees how an agent connects now, which a restart rightly forgets.

use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Rest,
    Mcp,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Rest => "rest",
            Transport::Mcp => "mcp",
        }
    }
}

/// An agent's latest way in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub transport: Transport,
    /// The MCP client's `clientInfo` from its `initialize`: name and version.
    pub client: Option<(String, String)>,
    pub at: DateTime<Utc>,
}

#[derive(Default)]
pub struct Connections {
    by_agent: Mutex<HashMap<String, Connection>>,
    /// Cancelled when the gateway stops, so long-lived streams (MCP's) end and let it stop.
    pub stop: CancellationToken,
}

impl Connections {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Connection>> {
        self.by_agent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A REST request of this agent. An MCP client's name is kept until the agent uses REST.
    pub fn rest(&self, agent: &str, at: DateTime<Utc>) {
        let rest = Connection {
            transport: Transport::Rest,
            client: None,
            at,
        };
        let mut map = self.lock();
        // Every REST request lands here: a known agent's entry is replaced in place, no new key.
        match map.get_mut(agent) {
            Some(c) => *c = rest,
            None => {
                map.insert(agent.to_string(), rest);
            }
        }
    }

    /// An MCP session this agent opened, with the client it named.
    pub fn mcp(&self, agent: &str, client: Option<(String, String)>, at: DateTime<Utc>) {
        let mut map = self.lock();
        let keep = map
            .get(agent)
            .filter(|c| c.transport == Transport::Mcp)
            .and_then(|c| c.client.clone());
        map.insert(
            agent.to_string(),
            Connection {
                transport: Transport::Mcp,
                client: client.or(keep),
                at,
            },
        );
    }

    pub fn of(&self, agent: &str) -> Option<Connection> {
        self.lock().get(agent).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_way_in_wins_and_an_mcp_client_is_remembered_within_mcp() {
        let c = Connections::default();
        let t = Utc::now();
        assert_eq!(c.of("a"), None);
        c.mcp("a", Some(("claude-code".into(), "2.1".into())), t);
        c.mcp("a", None, t);
        assert_eq!(
            c.of("a").unwrap().client,
            Some(("claude-code".into(), "2.1".into()))
        );
        c.rest("a", t);
        let now = c.of("a").unwrap();
        assert_eq!((now.transport, now.client), (Transport::Rest, None));
    }
}
