//! config.example.toml documents every sandbox key with its default value.

use agentdesk::sandbox::Settings;

#[test]
fn the_example_config_parses_to_the_defaults() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.example.toml"))
        .unwrap();
    assert_eq!(Settings::from_toml(&text).unwrap(), Settings::default());
}
