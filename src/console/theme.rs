//! Colors and emphasis for every view, from embedded TOML assets or, under `NO_COLOR`, modifiers only.
//!
//! Views never name a color: they ask the theme for the role (`good`, `critical`, …), so a user's
//! theme file and `NO_COLOR` reach every screen.

use std::ffi::OsString;

use ratatui::style::{Color, Modifier, Style};

use super::suggest::{closest, did_you_mean};

const DARK: &str = include_str!("../../assets/theme-dark.toml");
const LIGHT: &str = include_str!("../../assets/theme-light.toml");

/// Declares the theme's styles once, so the struct, the TOML keys and the list used by tests and
/// the help screen cannot drift apart.
macro_rules! theme_styles {
    ($($field:ident: $doc:literal,)*) => {
        /// One [`Style`] per role. In TOML, `<role>` sets the foreground and `<role>_bg` the
        /// background (see `assets/theme-dark.toml`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Theme {
            $(#[doc = $doc] pub $field: Style,)*
        }

        impl Theme {
            /// Every role with its style, in declaration order.
            pub fn styles(&self) -> Vec<(&'static str, Style)> {
                vec![$((stringify!($field), self.$field),)*]
            }

            fn style_mut(&mut self, role: &str) -> Option<&mut Style> {
                match role {
                    $(stringify!($field) => Some(&mut self.$field),)*
                    _ => None,
                }
            }

            const ROLES: &'static [&'static str] = &[$(stringify!($field),)*];
        }
    };
}

theme_styles! {
    base: "Ordinary text and the screen background.",
    muted: "Secondary text: labels, timestamps, hints.",
    accent: "Highlights: the focused value, links, key names in footers.",
    header: "The header bar.",
    tab_active: "The selected tab.",
    tab_inactive: "Other tabs.",
    selected: "The selected table row (background only, so cell colors survive).",
    border_focused: "Border of the focused pane.",
    border_unfocused: "Borders of other panes.",
    good: "Profit and long.",
    bad: "Loss and short.",
    warn: "Countdown under 60 s; amber.",
    critical: "Countdown under 15 s; red.",
    expired: "Expired proposals, greyed out.",
    badge_sandbox: "The SANDBOX badge in the header.",
    badge_live: "The LIVE badge in the header.",
    toast: "Transient notices.",
    error: "Error messages.",
}

impl Theme {
    /// Emphasis shared by the color themes; the colors come from the assets.
    fn skeleton() -> Theme {
        let bold = Style::new().add_modifier(Modifier::BOLD);
        Theme {
            base: Style::new(),
            muted: Style::new(),
            accent: Style::new(),
            header: bold,
            tab_active: bold,
            tab_inactive: Style::new(),
            selected: bold,
            border_focused: Style::new(),
            border_unfocused: Style::new(),
            good: Style::new(),
            bad: Style::new(),
            warn: Style::new(),
            critical: bold,
            expired: Style::new().add_modifier(Modifier::CROSSED_OUT),
            badge_sandbox: bold,
            badge_live: bold,
            toast: Style::new(),
            error: bold,
        }
    }

    /// The embedded dark theme (the default).
    pub fn dark() -> Theme {
        // The asset is compiled in and a unit test parses it, so this cannot fail at run time.
        Theme::from_toml(&Theme::skeleton(), DARK)
            .expect("embedded assets/theme-dark.toml is valid")
    }

    /// The embedded light theme, for terminals with a light background.
    pub fn light() -> Theme {
        Theme::from_toml(&Theme::skeleton(), LIGHT)
            .expect("embedded assets/theme-light.toml is valid")
    }

    /// A built-in theme by name: `dark` or `light` (case-insensitive).
    pub fn named(name: &str) -> Result<Theme, ThemeError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "dark" => Ok(Theme::dark()),
            "light" => Ok(Theme::light()),
            _ => Err(ThemeError::UnknownTheme(name.to_string())),
        }
    }

    /// For NO_COLOR: no colors at all. Emphasis alone keeps apart what color would: the selected
    /// row is reversed, profit is bold and loss underlined (views also print the sign), and the
    /// countdown goes bold (good) → bold underlined (warn, under 60 s) → bold reversed (critical)
    /// → dim struck-through (expired).
    pub fn monochrome() -> Theme {
        let m = |modifier: Modifier| Style::new().add_modifier(modifier);
        Theme {
            base: Style::new(),
            muted: m(Modifier::DIM),
            accent: m(Modifier::BOLD),
            header: m(Modifier::REVERSED),
            tab_active: m(Modifier::REVERSED | Modifier::BOLD),
            tab_inactive: Style::new(),
            selected: m(Modifier::REVERSED),
            border_focused: m(Modifier::BOLD),
            border_unfocused: m(Modifier::DIM),
            good: m(Modifier::BOLD),
            bad: m(Modifier::UNDERLINED),
            warn: m(Modifier::BOLD | Modifier::UNDERLINED),
            critical: m(Modifier::BOLD | Modifier::REVERSED),
            expired: m(Modifier::DIM | Modifier::CROSSED_OUT),
            badge_sandbox: m(Modifier::REVERSED),
            badge_live: m(Modifier::REVERSED | Modifier::BOLD | Modifier::UNDERLINED),
            toast: m(Modifier::REVERSED),
            error: m(Modifier::BOLD | Modifier::UNDERLINED),
        }
    }

    /// `base` with the `[colors]` of `text` applied; keys not in the file keep `base`'s colors.
    pub fn from_toml(base: &Theme, text: &str) -> Result<Theme, ThemeError> {
        let table: toml::Table = toml::from_str(text)?;
        let mut theme = *base;
        for (name, value) in &table {
            if name != "colors" {
                return Err(ThemeError::UnknownTable(name.clone()));
            }
            let Some(colors) = value.as_table() else {
                return Err(ThemeError::ColorsNotATable);
            };
            for (key, value) in colors {
                let (role, background) = match key.strip_suffix("_bg") {
                    Some(role) => (role, true),
                    None => (key.as_str(), false),
                };
                let Some(style) = theme.style_mut(role) else {
                    let keys = Theme::ROLES
                        .iter()
                        .flat_map(|r| [r.to_string(), format!("{r}_bg")])
                        .collect::<Vec<_>>();
                    return Err(ThemeError::UnknownKey {
                        key: key.clone(),
                        closest: closest(key, keys.iter().map(String::as_str)).map(str::to_string),
                    });
                };
                let color = parse_color_value(value).map_err(|error| ThemeError::Color {
                    key: key.clone(),
                    error,
                })?;
                *style = if background {
                    style.bg(color)
                } else {
                    style.fg(color)
                };
            }
        }
        Ok(theme)
    }
}

impl Default for Theme {
    fn default() -> Self {
        Theme::dark()
    }
}

/// Whether the user asked for no color (https://no-color.org: set and not empty).
pub fn no_color_requested() -> bool {
    no_color_in(std::env::var_os("NO_COLOR"))
}

fn no_color_in(value: Option<OsString>) -> bool {
    value.is_some_and(|v| !v.is_empty())
}

const COLOR_HELP: &str =
    "expected \"#rrggbb\", an ANSI name like \"red\" or \"darkgray\", \"reset\", or 0-255";

/// Why a theme file or name is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ThemeError {
    #[error("unknown theme `{0}`; expected dark or light")]
    UnknownTheme(String),
    #[error("invalid theme TOML: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("unknown table `{0}` in theme; expected [colors]")]
    UnknownTable(String),
    #[error("`colors` must be a table: [colors]")]
    ColorsNotATable,
    #[error("[colors] unknown key `{key}`{}", did_you_mean(.closest))]
    UnknownKey {
        key: String,
        closest: Option<String>,
    },
    #[error("[colors] {key}: {error}")]
    Color { key: String, error: ColorError },
}

/// A color that is none of the forms [`COLOR_HELP`] lists.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ColorError {
    #[error("invalid color `{0}`; {help}", help = COLOR_HELP)]
    Text(String),
    #[error("invalid color {0}; {help}", help = COLOR_HELP)]
    Value(toml::Value),
}

fn parse_color_value(value: &toml::Value) -> Result<Color, ColorError> {
    match value {
        toml::Value::String(s) => parse_color(s),
        toml::Value::Integer(n) => u8::try_from(*n)
            .map(Color::Indexed)
            .map_err(|_| ColorError::Value(value.clone())),
        other => Err(ColorError::Value(other.clone())),
    }
}

/// Parses a color string. Names are case-insensitive and may be written `dark_gray`, `dark-gray`
/// or `dark gray`; `grey` is `gray`.
pub fn parse_color(text: &str) -> Result<Color, ColorError> {
    let invalid = || ColorError::Text(text.to_string());
    let trimmed = text.trim();
    if let Some(hex) = trimmed.strip_prefix('#') {
        // Checked before slicing: six ASCII hex digits make every two-byte slice valid.
        if hex.len() != 6 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(invalid());
        }
        let channel = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| invalid());
        return Ok(Color::Rgb(channel(0)?, channel(2)?, channel(4)?));
    }
    if !trimmed.is_empty() && trimmed.chars().all(|c| c.is_ascii_digit()) {
        return trimmed
            .parse::<u8>()
            .map(Color::Indexed)
            .map_err(|_| invalid());
    }
    let name: String = trimmed
        .chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .collect::<String>()
        .to_ascii_lowercase()
        .replace("grey", "gray");
    let color = match name.as_str() {
        "reset" => Color::Reset,
        "black" => Color::Black,
        "red" => Color::Red,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "blue" => Color::Blue,
        "magenta" => Color::Magenta,
        "cyan" => Color::Cyan,
        "gray" => Color::Gray,
        "darkgray" => Color::DarkGray,
        "lightred" => Color::LightRed,
        "lightgreen" => Color::LightGreen,
        "lightyellow" => Color::LightYellow,
        "lightblue" => Color::LightBlue,
        "lightmagenta" => Color::LightMagenta,
        "lightcyan" => Color::LightCyan,
        "white" => Color::White,
        _ => return Err(invalid()),
    };
    Ok(color)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_parse_and_differ() {
        let dark = Theme::dark();
        let light = Theme::light();
        assert_ne!(dark, light);
        assert_eq!(dark.good.fg, Some(Color::Green));
        assert_eq!(light.good.fg, Some(Color::Indexed(28)));
        assert_eq!(Theme::named("dark"), Ok(dark));
        assert_eq!(Theme::named(" Light "), Ok(light));
        assert_eq!(Theme::default(), dark);
        assert_eq!(
            Theme::named("solarized").map_err(|e| e.to_string()),
            Err("unknown theme `solarized`; expected dark or light".to_string())
        );
    }

    #[test]
    fn color_themes_keep_urgency_and_pnl_apart() {
        for theme in [Theme::dark(), Theme::light()] {
            let fg = |s: Style| s.fg;
            assert_ne!(fg(theme.good), fg(theme.bad));
            assert_ne!(fg(theme.warn), fg(theme.critical));
            assert_ne!(fg(theme.expired), fg(theme.base));
            assert!(theme.selected.bg.is_some());
            // Selection must not repaint the text, or a red loss turns default-colored when selected.
            assert_eq!(theme.selected.fg, None);
            assert_ne!(theme.badge_sandbox.bg, theme.badge_live.bg);
        }
    }

    #[test]
    fn overrides_apply_and_keep_the_rest() {
        let dark = Theme::dark();
        let theme = Theme::from_toml(
            &dark,
            "[colors]\ngood = \"#00ff7f\"\nbad_bg = 52\nheader = \"Dark_Grey\"\nwarn = \"11\"\n",
        )
        .unwrap();
        assert_eq!(theme.good.fg, Some(Color::Rgb(0, 0xff, 0x7f)));
        assert_eq!(theme.bad.bg, Some(Color::Indexed(52)));
        assert_eq!(theme.bad.fg, dark.bad.fg);
        assert_eq!(theme.header.fg, Some(Color::DarkGray));
        assert_eq!(theme.header.bg, dark.header.bg);
        assert_eq!(theme.warn.fg, Some(Color::Indexed(11)));
        // Emphasis is not part of the file, so it survives overrides.
        assert!(theme.header.add_modifier.contains(Modifier::BOLD));
        assert_eq!(theme.accent, dark.accent);
        assert_eq!(Theme::from_toml(&dark, "").unwrap(), dark);
        // Overrides work on top of monochrome too, for users who want one color back.
        let mono = Theme::from_toml(&Theme::monochrome(), "[colors]\nbad = \"red\"").unwrap();
        assert_eq!(mono.bad.fg, Some(Color::Red));
    }

    #[test]
    fn errors_name_the_key() {
        let dark = Theme::dark();
        let cases = [
            (
                "[colors]\naccent = \"#12345\"",
                "[colors] accent: invalid color `#12345`; expected \"#rrggbb\", an ANSI name like \"red\" or \"darkgray\", \"reset\", or 0-255",
            ),
            (
                "[colors]\ngood_bg = \"chartreuse\"",
                "[colors] good_bg: invalid color `chartreuse`; expected \"#rrggbb\", an ANSI name like \"red\" or \"darkgray\", \"reset\", or 0-255",
            ),
            (
                "[colors]\nmuted = 256",
                "[colors] muted: invalid color 256; expected \"#rrggbb\", an ANSI name like \"red\" or \"darkgray\", \"reset\", or 0-255",
            ),
            (
                "[colors]\nmuted = \"300\"",
                "[colors] muted: invalid color `300`; expected \"#rrggbb\", an ANSI name like \"red\" or \"darkgray\", \"reset\", or 0-255",
            ),
            (
                "[colors]\nmuted = true",
                "[colors] muted: invalid color true; expected \"#rrggbb\", an ANSI name like \"red\" or \"darkgray\", \"reset\", or 0-255",
            ),
            (
                "[colors]\nacent = \"red\"",
                "[colors] unknown key `acent`; did you mean `accent`?",
            ),
            ("[colors]\nzzz = \"red\"", "[colors] unknown key `zzz`"),
            (
                "[colours]\nbase = \"red\"",
                "unknown table `colours` in theme; expected [colors]",
            ),
            ("colors = \"red\"", "`colors` must be a table: [colors]"),
        ];
        for (text, error) in cases {
            assert_eq!(
                Theme::from_toml(&dark, text).map_err(|e| e.to_string()),
                Err(error.to_string()),
                "{text}"
            );
        }
        assert!(
            Theme::from_toml(&dark, "[colors")
                .unwrap_err()
                .to_string()
                .starts_with("invalid theme TOML")
        );
    }

    #[test]
    fn color_syntax() {
        assert_eq!(parse_color("#FFaa00"), Ok(Color::Rgb(255, 0xaa, 0)));
        assert_eq!(parse_color("reset"), Ok(Color::Reset));
        assert_eq!(parse_color("LightCyan"), Ok(Color::LightCyan));
        assert_eq!(parse_color("grey"), Ok(Color::Gray));
        assert_eq!(parse_color("0"), Ok(Color::Indexed(0)));
        assert_eq!(parse_color("255"), Ok(Color::Indexed(255)));
        for bad in [
            "", "#", "#12345g", "#1234567", "#ééé", "-1", "256", "1.5", "redd",
        ] {
            assert!(parse_color(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn monochrome_has_no_colors_but_keeps_distinctions() {
        let mono = Theme::monochrome();
        for (role, style) in mono.styles() {
            // Rebuilding from modifiers alone drops fg, bg and underline color: equal means none.
            let modifiers_only = Style::new()
                .add_modifier(style.add_modifier)
                .remove_modifier(style.sub_modifier);
            assert_eq!(style, modifiers_only, "{role} has a color");
        }
        // The countdown's stages, as `widgets::urgency` picks them (over a minute it is `good`).
        let distinct = [mono.good, mono.warn, mono.critical, mono.expired];
        for (i, a) in distinct.iter().enumerate() {
            for b in &distinct[i + 1..] {
                assert_ne!(a, b, "countdown stages must look different");
            }
        }
        assert_ne!(mono.good, mono.bad);
        assert_ne!(mono.selected, mono.base);
        assert_ne!(mono.badge_sandbox, mono.badge_live);
    }

    #[test]
    fn styles_lists_every_role() {
        let styles = Theme::dark().styles();
        assert_eq!(styles.len(), Theme::ROLES.len());
        assert_eq!(styles.len(), 18);
    }

    #[test]
    fn no_color_convention() {
        assert!(!no_color_in(None));
        assert!(!no_color_in(Some(OsString::new())));
        assert!(no_color_in(Some(OsString::from("1"))));
        assert!(no_color_in(Some(OsString::from("0"))));
    }
}
