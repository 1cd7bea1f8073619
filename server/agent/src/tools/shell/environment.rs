//! What a shell command inherits: Tandem's own environment, minus the variables that hold model
//! keys. A command's output goes to the model (and into the saved session), so `env | grep KEY`
//! would otherwise hand the key to the provider and to disk. Removed by default: every key
//! variable Tandem knows of (`ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, `OPENAI_API_KEY`), every
//! `apiKeyEnv` the settings name, and whatever `shell.hideEnv` adds; `shell.passEnv` lets chosen
//! ones through.

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Which variables a command does not inherit.
#[derive(Debug, Clone)]
pub struct ShellEnvironment {
    hidden: GlobSet,
    passed: GlobSet,
}

impl Default for ShellEnvironment {
    /// Hides the key variables Tandem knows of, nothing else.
    fn default() -> Self {
        ShellEnvironment::new(&[], &[], &[])
    }
}

impl ShellEnvironment {
    /// Hides the known key variables, `key_variables` (the settings' `apiKeyEnv`s) and `hide`
    /// (names, `*` wildcards), except those `pass` names. Patterns that are not valid globs are
    /// taken as plain names.
    pub fn new(key_variables: &[String], hide: &[String], pass: &[String]) -> Self {
        let known = tandem_providers::settings::KEY_VARIABLES
            .iter()
            .map(|name| (*name).to_owned());
        let hidden: Vec<String> = known
            .chain(key_variables.iter().cloned())
            .chain(hide.iter().cloned())
            .collect();
        ShellEnvironment {
            hidden: globs(&hidden),
            passed: globs(pass),
        }
    }

    /// Whether a command must not see `name`.
    pub fn hides(&self, name: &str) -> bool {
        self.hidden.is_match(name) && !self.passed.is_match(name)
    }

    /// The variables of Tandem's own environment a command does not get.
    pub fn hidden_names(&self) -> Vec<String> {
        std::env::vars_os()
            .filter_map(|(name, _)| name.into_string().ok())
            .filter(|name| self.hides(name))
            .collect()
    }
}

fn globs(patterns: &[String]) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).or_else(|_| Glob::new(&globset::escape(pattern)));
        if let Ok(glob) = glob {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_keys_are_hidden_unless_passed() {
        let env = ShellEnvironment::new(
            &["OPENROUTER_API_KEY".to_owned()],
            &["AWS_*".to_owned(), "*_TOKEN".to_owned()],
            &["GEMINI_API_KEY".to_owned(), "CI_TOKEN".to_owned()],
        );
        let cases = [
            ("ANTHROPIC_API_KEY", true),
            ("OPENAI_API_KEY", true),
            ("GEMINI_API_KEY", false),
            ("OPENROUTER_API_KEY", true),
            ("AWS_SECRET_ACCESS_KEY", true),
            ("GITHUB_TOKEN", true),
            ("CI_TOKEN", false),
            ("PATH", false),
            ("HOME", false),
        ];
        for (name, hidden) in cases {
            assert_eq!(env.hides(name), hidden, "{name}");
        }
        assert!(ShellEnvironment::default().hides("ANTHROPIC_API_KEY"));
        assert!(!ShellEnvironment::default().hides("GITHUB_TOKEN"));
    }
}
