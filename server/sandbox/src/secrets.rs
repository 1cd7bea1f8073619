//! Files that look like they hold secrets, told by their path alone, so nothing has to be read
//! to decide: one list, kept here, for every place that decides whether a file's text may go
//! to a model without anyone asking for that file. Inline completions use it for the documents
//! they show the completion model (docs/completions.md, "Documents that are never sent").
//! Secrets in ordinary files cannot be told by name; `.gitignore` and the `completion`
//! settings' `excludeDocuments` cover more.

use std::path::{Component, Path};

/// How sure a path is to hold secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secret {
    /// A kind of file made for secrets: dotenv files, private keys and key stores, credential
    /// files, anything in a credentials folder.
    Kind,
    /// A name that says so (`secrets.yaml`, `db_password.txt`), which code also has
    /// (`password_reset.py`, `secret_santa.py`).
    Name,
}

/// Extensions of private keys and key stores.
const KEY_EXTENSIONS: &[&str] = &["pem", "key", "p12", "pfx", "jks", "keystore", "ppk"];
/// How SSH private keys (and their `.pub` halves, harmless but alike) are named.
const SSH_KEY_PREFIXES: &[&str] = &["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"];
/// Files that hold passwords or tokens by design.
const CREDENTIAL_FILES: &[&str] = &[
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    ".htpasswd",
    "credentials",
];
/// Folders whose files are keys and credentials.
const CREDENTIAL_FOLDERS: &[&str] = &[".ssh", ".gnupg", ".aws", ".kube"];
/// Words that make a file name look secret. Not `token` or `key`: `tokenizer.rs` and
/// `keyboard.py` are code.
const SECRET_WORDS: &[&str] = &[
    "secret",
    "credential",
    "password",
    "passwd",
    "apikey",
    "api_key",
];

/// Whether `path` looks like it holds secrets, and how surely (case does not matter):
///
/// - [`Secret::Kind`]: a dotenv file (a name starting `.env` — `.env`, `.env.local`,
///   `.env.py`, `.envrc` — or ending `.env`); a private key or key store (`*.pem`, `*.key`,
///   `*.p12`, `*.pfx`, `*.jks`, `*.keystore`, `*.ppk`, `id_rsa*`, `id_dsa*`, `id_ecdsa*`,
///   `id_ed25519*`); a credential file (`.netrc`, `_netrc`, `.npmrc`, `.pypirc`, `.pgpass`,
///   `.git-credentials`, `.htpasswd`, `credentials`); anything under a `.ssh`, `.gnupg`,
///   `.aws` or `.kube` folder.
/// - [`Secret::Name`]: a file name containing `secret`, `credential`, `password`, `passwd`,
///   `apikey` or `api_key`.
pub fn secret_looking(path: &Path) -> Option<Secret> {
    let mut names = path.components().filter_map(|component| match component {
        Component::Normal(name) => Some(name.to_string_lossy().to_lowercase()),
        _ => None,
    });
    let name = names.next_back()?;
    if names.any(|folder| CREDENTIAL_FOLDERS.contains(&folder.as_str())) {
        return Some(Secret::Kind);
    }
    let extension = name.rsplit_once('.').map(|(_, extension)| extension);
    let kind = name.starts_with(".env")
        || name.ends_with(".env")
        || extension.is_some_and(|extension| KEY_EXTENSIONS.contains(&extension))
        || SSH_KEY_PREFIXES
            .iter()
            .any(|prefix| name.starts_with(prefix))
        || CREDENTIAL_FILES.contains(&name.as_str());
    if kind {
        Some(Secret::Kind)
    } else if SECRET_WORDS.iter().any(|word| name.contains(word)) {
        Some(Secret::Name)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_paths() {
        let kind = Some(Secret::Kind);
        let name = Some(Secret::Name);
        let cases = [
            // Dotenv files, whatever follows.
            (".env", kind),
            (".env.local", kind),
            ("app/.env.py", kind),
            (".envrc", kind),
            ("deploy/production.env", kind),
            (".ENV", kind),
            // Keys.
            ("certs/server.pem", kind),
            ("tls.key", kind),
            ("store.p12", kind),
            ("id_rsa", kind),
            ("id_ed25519.pub", kind),
            ("release.keystore", kind),
            // Credential files and folders.
            (".npmrc", kind),
            (".git-credentials", kind),
            ("/home/u/.aws/credentials", kind),
            ("/home/u/.aws/config", kind),
            (".ssh/config", kind),
            ("home/.gnupg/gpg.conf", kind),
            // Names that say so.
            ("config/secrets.yaml", name),
            ("db_password.txt", name),
            ("GoogleCredentials.json", name),
            ("password_reset.py", name),
            ("api_key.txt", name),
            // Ordinary files.
            ("src/main.rs", None),
            ("environment.py", None),
            ("src/env.rs", None),
            ("tokenizer.rs", None),
            ("keyboard.py", None),
            ("keys.rs", None),
            ("docs/ssh.md", None),
            ("monkey.py", None),
            ("", None),
        ];
        for (path, expected) in cases {
            assert_eq!(secret_looking(Path::new(path)), expected, "{path}");
        }
    }
}
