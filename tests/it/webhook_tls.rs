//! `webhook_ca_file` and certificates marked as a CA: the plain local setup
//! (`openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -addext
//! subjectAltName=DNS:localhost,IP:127.0.0.1`) makes one self-signed certificate with
//! `basicConstraints CA:TRUE`, which the receiver then presents as its own. Listed, it is accepted;
//! a certificate that is not listed is still refused.

use crate::common;
use crate::signals::{ALL, receiver, request, wait_deliveries};
use crate::staged::long_btc;
use agentdesk::api::Scope;
use agentdesk::sandbox::Settings;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A self-signed certificate for localhost / 127.0.0.1 marked as a CA, as `openssl req -x509`
/// makes it: its PEM and a server configuration presenting it.
fn ca_marked_certificate() -> (String, Arc<ServerConfig>) {
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params
        .subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let der = CertificateDer::from(cert.der().to_vec());
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![der], private)
        .unwrap();
    (cert.pem(), Arc::new(config))
}

#[tokio::test]
async fn a_listed_ca_marked_certificate_is_accepted_and_an_unlisted_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (listed_pem, listed_tls) = ca_marked_certificate();
    let (_, unlisted_tls) = ca_marked_certificate();
    let pem = dir.path().join("receiver.pem");
    std::fs::write(&pem, listed_pem).unwrap();
    let trusted = receiver(listed_tls).await;
    let stranger = receiver(unlisted_tls).await;
    let s = common::start_with(Settings {
        webhook_allow_hosts: vec!["127.0.0.1".into(), "localhost".into()],
        webhook_ca_file: Some(pem),
        tick_ms: 50,
        ..Default::default()
    })
    .await;
    let c = s.client(Scope::WebhookAlerts);
    let ok = c
        .create_signal_destination(&request(&trusted.url("/ok"), &["*"], &ALL))
        .await
        .unwrap();
    let refused = c
        .create_signal_destination(&request(&stranger.url("/no"), &["*"], &ALL))
        .await
        .unwrap();
    c.place_order(&long_btc()).await.unwrap();

    trusted.wait_for("/ok", 1, 10).await;
    let start = Instant::now();
    let row = loop {
        let log = c.list_signal_deliveries(&refused.id, None).await.unwrap();
        if let Some(row) = log.deliveries.into_iter().find(|r| r.attempts >= 1) {
            break row;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no attempt");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(row.status, "retrying");
    let error = row.last_error.unwrap_or_default();
    assert!(error.to_lowercase().contains("certificate"), "{error}");
    assert!(
        stranger.got().is_empty(),
        "nothing reached the unlisted receiver"
    );
    let delivered = wait_deliveries(&c, &ok.id, 1, "delivered").await;
    assert_eq!(delivered[0].attempts, 1);
}

/// The gateway's `[[notify]]` destinations trust a `ca_file` the same way as signal deliveries
/// trust `webhook_ca_file`: the CA-marked self-signed certificate the local setup makes is
/// accepted when listed.
#[tokio::test]
async fn a_notify_ca_file_is_trusted_as_a_webhook_ca_file_is() {
    use agentdesk::gateway::rules::policy::GateSettings;
    use agentdesk::gateway::upstream::notify::Destination;
    let dir = tempfile::tempdir().unwrap();
    let (listed_pem, listed_tls) = ca_marked_certificate();
    let pem = dir.path().join("receiver.pem");
    std::fs::write(&pem, listed_pem).unwrap();
    let trusted = receiver(listed_tls).await;
    let sandbox = common::start().await;
    let gate = common::start_gateway_with(
        &sandbox.base_url(),
        &sandbox.clock,
        &dir.path().join("g.db"),
        |c| {
            c.settings = GateSettings {
                defaults: c.settings.defaults.clone(),
                ..GateSettings::default()
            };
            c.notify = vec![Destination {
                url: trusted.url("/hook"),
                secret: agentdesk::api::webhook_sig::new_secret(),
                allow_hosts: vec!["localhost".into()],
                ca_file: Some(pem.clone()),
                max_attempts: 2,
            }];
        },
    )
    .await;
    let key = sandbox.key(Scope::McpMutate);
    let agent = agentdesk::api::client::Client::new(&gate.base_url(), Some(key)).unwrap();
    let who = agent.whoami(false).await.unwrap();
    let signal = agentdesk::api::model::TradeSignal {
        id: Some(who.messenger_id),
        ..long_btc()
    };
    agent.propose_trade(&signal).await.unwrap();
    let start = Instant::now();
    while trusted.got.lock().unwrap().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no notification reached the receiver"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(trusted.got.lock().unwrap()[0].path, "/hook");
}
