//! Tandem's extension for Zed's editor. Zed starts language servers only from extensions, so
//! this one registers the `tandem` server for the languages `extension.toml` lists and tells Zed
//! how to start it, as `tandem lsp` with the project's shell environment (where model keys such
//! as `ANTHROPIC_API_KEY` usually are). The executable is, in this order: the one Zed's
//! `lsp.tandem.binary.path` setting names; `tandem` on the project's `PATH`; or the release
//! archive for this platform, downloaded from GitHub into the extension's working folder (one
//! folder per version; older ones are removed). It also answers the server's
//! `workspace/configuration` pull for the `tandem` section from Zed's `lsp.tandem.settings`.
//! Code actions, `tandem:` comments and the agent are all the server's; nothing here knows about
//! them. The agent panel reaches Tandem another way, through `tandem acp` (see README.md).
//!
//! What runs only inside Zed (its `Worktree`, GitHub and download calls) is kept behind thin
//! wrappers, so that the choices and the installation are tested on the host: the installation
//! through [`Releases`], with a fake GitHub that writes real files.

use std::fs;
use std::path::{Path, PathBuf};

use zed_extension_api::{
    self as zed,
    serde_json::{json, Value},
    settings::{CommandSettings, LspSettings},
    Architecture, DownloadedFileType, EnvVars, GithubRelease, GithubReleaseOptions,
    LanguageServerId, LanguageServerInstallationStatus, Os, Worktree,
};

/// The executable the extension runs.
const EXECUTABLE: &str = "tandem";
/// The sandbox launcher `tandem` looks for beside itself; every release archive holds both.
const CONFINE: &str = "tandem-confine";
/// Where the releases are.
const REPOSITORY: &str = "tandem-lsp/tandem";
/// Each downloaded version lives in a folder `tandem-{version}` of the working folder.
const VERSION_FOLDER: &str = "tandem-";

/// How to get `tandem` another way, for the errors that end in "no `tandem`".
const INSTALL_HINT: &str = "Install it yourself: `npm install -g @tandem-lsp/tandem`, or \
    `cargo install --locked --git https://github.com/tandem-lsp/tandem tandem` (into \
    ~/.cargo/bin: make sure that folder is on your shell's PATH); or give its path in Zed's \
    settings: \
    \"lsp\": { \"tandem\": { \"binary\": { \"path\": \"/full/path/to/tandem\" } } }. Then run \
    `editor: restart language server`.";

struct Tandem {
    /// The downloaded `tandem` this session found or installed, so that GitHub is asked once.
    downloaded: Option<String>,
}

impl zed::Extension for Tandem {
    fn new() -> Self {
        Tandem { downloaded: None }
    }

    fn language_server_command(
        &mut self,
        language_server_id: &LanguageServerId,
        worktree: &Worktree,
    ) -> zed::Result<zed::Command> {
        let settings = LspSettings::for_worktree(language_server_id.as_ref(), worktree)
            .map_err(|error| format!("cannot read Zed's `lsp.tandem` settings: {error}"))?;
        let binary = settings.binary.as_ref();
        let env = worktree.shell_env();
        if let Some(path) = binary.and_then(|binary| binary.path.clone()) {
            return Ok(server_command(path, binary, env));
        }
        if let Some(path) = worktree.which(EXECUTABLE) {
            return Ok(server_command(path, binary, env));
        }
        let path = match &self.downloaded {
            Some(path) if is_installed(Path::new(path).parent().unwrap_or(Path::new(""))) => {
                path.clone()
            }
            _ => {
                let releases = ZedReleases { language_server_id };
                install(&releases, zed::current_platform(), Path::new(""))?
            }
        };
        self.downloaded = Some(path.clone());
        Ok(server_command(path, binary, env))
    }

    /// Zed answers `workspace/configuration` by looking each requested section up in this value,
    /// and Tandem asks for the `tandem` section; without this Zed would send it nothing from
    /// `lsp.tandem.settings`. (`lsp.tandem.initialization_options` needs no code: Zed merges it
    /// into `initialize` itself.)
    fn language_server_workspace_configuration(
        &mut self,
        language_server_id: &LanguageServerId,
        worktree: &Worktree,
    ) -> zed::Result<Option<Value>> {
        let settings = LspSettings::for_worktree(language_server_id.as_ref(), worktree)
            .map_err(|error| format!("cannot read Zed's `lsp.tandem` settings: {error}"))?;
        Ok(settings.settings.map(|tandem| json!({ "tandem": tandem })))
    }
}

zed::register_extension!(Tandem);

/// `executable` run as a language server: with the arguments `lsp.tandem.binary.arguments`
/// gives, else `lsp`; in the project's shell environment, with `lsp.tandem.binary.env` on top.
fn server_command(
    executable: String,
    binary: Option<&CommandSettings>,
    mut env: EnvVars,
) -> zed::Command {
    let args = binary
        .and_then(|binary| binary.arguments.clone())
        .unwrap_or_else(|| vec!["lsp".to_owned()]);
    if let Some(extra) = binary.and_then(|binary| binary.env.as_ref()) {
        env.retain(|(key, _)| !extra.contains_key(key));
        let mut extra: Vec<_> = extra.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        extra.sort();
        env.extend(extra);
    }
    zed::Command {
        command: executable,
        args,
        env,
    }
}

/// The release target whose archive runs on `os` and `arch`: the static musl builds on Linux
/// (one archive for every distribution). An error saying what to do instead where Tandem
/// releases nothing.
fn release_target(os: Os, arch: Architecture) -> zed::Result<&'static str> {
    match (os, arch) {
        (Os::Linux, Architecture::X8664) => Ok("x86_64-unknown-linux-musl"),
        (Os::Linux, Architecture::Aarch64) => Ok("aarch64-unknown-linux-musl"),
        (Os::Mac, Architecture::X8664) => Ok("x86_64-apple-darwin"),
        (Os::Mac, Architecture::Aarch64) => Ok("aarch64-apple-darwin"),
        (Os::Windows, _) => Err(
            "Tandem does not run on Windows: it needs Unix process groups, \
             and no Windows build is released. Run Zed on Linux or macOS, or open the project \
             on a Linux machine (a remote project over SSH, or in WSL) and install Tandem there."
                .to_owned(),
        ),
        (Os::Linux | Os::Mac, Architecture::X86) => Err(format!(
            "Tandem releases no build for 32-bit x86, so the extension cannot download one. \
             {INSTALL_HINT}"
        )),
    }
}

/// The release archive of `version` (the tag without its `v`) for `target`, as the release
/// workflow names it.
fn asset_name(version: &str, target: &str) -> String {
    format!("tandem-{version}-{target}.tar.gz")
}

/// What the installation needs from Zed: the latest release, its download and unpacking, file
/// modes and the status Zed shows. `folder` and `file` are relative to the working folder.
trait Releases {
    fn latest(&self) -> zed::Result<GithubRelease>;
    fn download_gzip_tar(&self, url: &str, folder: &str) -> zed::Result<()>;
    fn make_executable(&self, file: &str) -> zed::Result<()>;
    fn status(&self, status: LanguageServerInstallationStatus);
}

/// The real thing, inside Zed.
struct ZedReleases<'a> {
    language_server_id: &'a LanguageServerId,
}

impl Releases for ZedReleases<'_> {
    fn latest(&self) -> zed::Result<GithubRelease> {
        zed::latest_github_release(
            REPOSITORY,
            GithubReleaseOptions {
                require_assets: true,
                pre_release: false,
            },
        )
    }

    fn download_gzip_tar(&self, url: &str, folder: &str) -> zed::Result<()> {
        zed::download_file(url, folder, DownloadedFileType::GzipTar)
    }

    fn make_executable(&self, file: &str) -> zed::Result<()> {
        zed::make_file_executable(file)
    }

    fn status(&self, status: LanguageServerInstallationStatus) {
        zed::set_language_server_installation_status(self.language_server_id, &status);
    }
}

/// Whether `folder` holds a complete unpacked archive: both executables.
fn is_installed(folder: &Path) -> bool {
    [EXECUTABLE, CONFINE]
        .iter()
        .all(|name| folder.join(name).is_file())
}

/// The `tandem-*` version folders in `root`, by name.
fn version_folders(root: &Path) -> Vec<String> {
    let listed = if root.as_os_str().is_empty() {
        Path::new(".")
    } else {
        root
    };
    let mut folders: Vec<String> = fs::read_dir(listed)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.starts_with(VERSION_FOLDER))
        .collect();
    folders.sort();
    folders
}

/// The path of the latest release's `tandem` for `platform` under `root` (Zed's working folder
/// for the extension; the path is relative when `root` is empty, as Zed wants it), downloaded
/// and unpacked first unless that version is already there. Other versions are then removed.
/// When GitHub cannot be asked (offline), a version already downloaded is used.
fn install(
    releases: &impl Releases,
    (os, arch): (Os, Architecture),
    root: &Path,
) -> zed::Result<String> {
    let target = release_target(os, arch)?;
    let path = |folder: &str, name: &str| -> PathBuf { root.join(folder).join(name) };
    let text = |path: PathBuf| path.to_string_lossy().into_owned();

    releases.status(LanguageServerInstallationStatus::CheckingForUpdate);
    let release = match releases.latest() {
        Ok(release) => release,
        Err(error) => {
            let installed = version_folders(root)
                .into_iter()
                .rev()
                .find(|folder| is_installed(&root.join(folder)));
            return match installed {
                Some(folder) => Ok(text(path(&folder, EXECUTABLE))),
                None => Err(format!(
                    "`tandem` is not on the PATH Zed uses for this project, and the extension \
                     could not ask GitHub for Tandem's latest release ({error}). {INSTALL_HINT}"
                )),
            };
        }
    };
    let version = release
        .version
        .strip_prefix('v')
        .unwrap_or(&release.version);
    let name = asset_name(version, target);
    let asset = release
        .assets
        .iter()
        .find(|asset| asset.name == name)
        .ok_or_else(|| {
            format!(
                "Tandem's release {} has no archive {name} for this platform. {INSTALL_HINT}",
                release.version
            )
        })?;

    let folder = format!("{VERSION_FOLDER}{version}");
    if !is_installed(&root.join(&folder)) {
        releases.status(LanguageServerInstallationStatus::Downloading);
        // What an interrupted download left would otherwise be taken for the archive.
        let _ = fs::remove_dir_all(root.join(&folder));
        let unpacked = releases
            .download_gzip_tar(&asset.download_url, &text(root.join(&folder)))
            .and_then(|()| {
                for name in [EXECUTABLE, CONFINE] {
                    if !path(&folder, name).is_file() {
                        return Err(format!("the archive holds no `{name}`"));
                    }
                    releases.make_executable(&text(path(&folder, name)))?;
                }
                Ok(())
            });
        if let Err(error) = unpacked {
            let _ = fs::remove_dir_all(root.join(&folder));
            return Err(format!(
                "could not download and unpack {} into the extension's folder: {error}. \
                 {INSTALL_HINT}",
                asset.download_url
            ));
        }
    }
    for old in version_folders(root) {
        if old != folder {
            let _ = fs::remove_dir_all(root.join(old));
        }
    }
    releases.status(LanguageServerInstallationStatus::None);
    Ok(text(path(&folder, EXECUTABLE)))
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::HashMap;

    use zed_extension_api::GithubReleaseAsset;

    use super::*;

    #[test]
    fn the_four_released_platforms_download_their_archives_by_exact_name() {
        let cases = [
            (
                Os::Linux,
                Architecture::X8664,
                "tandem-0.1.0-x86_64-unknown-linux-musl.tar.gz",
            ),
            (
                Os::Linux,
                Architecture::Aarch64,
                "tandem-0.1.0-aarch64-unknown-linux-musl.tar.gz",
            ),
            (
                Os::Mac,
                Architecture::X8664,
                "tandem-0.1.0-x86_64-apple-darwin.tar.gz",
            ),
            (
                Os::Mac,
                Architecture::Aarch64,
                "tandem-0.1.0-aarch64-apple-darwin.tar.gz",
            ),
        ];
        for (os, arch, archive) in cases {
            let target = release_target(os, arch).unwrap();
            assert_eq!(asset_name("0.1.0", target), archive);
        }
    }

    #[test]
    fn windows_says_tandem_does_not_run_there_and_what_to_do() {
        for arch in [
            Architecture::X8664,
            Architecture::Aarch64,
            Architecture::X86,
        ] {
            let error = release_target(Os::Windows, arch).unwrap_err();
            assert!(error.contains("does not run on Windows"), "{error}");
            assert!(error.contains("Linux or macOS"), "{error}");
            assert!(error.contains("WSL"), "{error}");
        }
    }

    #[test]
    fn thirty_two_bit_x86_says_how_to_install_tandem_another_way() {
        for os in [Os::Linux, Os::Mac] {
            let error = release_target(os, Architecture::X86).unwrap_err();
            assert!(error.contains("32-bit x86"), "{error}");
            assert!(
                error.contains("npm install -g @tandem-lsp/tandem"),
                "{error}"
            );
            assert!(
                error.contains(
                    "cargo install --locked --git https://github.com/tandem-lsp/tandem tandem"
                ),
                "{error}"
            );
            assert!(error.contains("\"binary\": { \"path\""), "{error}");
        }
    }

    #[test]
    fn found_tandem_runs_as_a_language_server_with_the_shell_environment() {
        let env = vec![("ANTHROPIC_API_KEY".to_owned(), "key".to_owned())];
        let command = server_command("/opt/bin/tandem".to_owned(), None, env.clone());
        assert_eq!(command.command, "/opt/bin/tandem");
        assert_eq!(command.args, ["lsp"]);
        assert_eq!(command.env, env);
    }

    #[test]
    fn binary_settings_give_the_arguments_and_add_to_the_environment() {
        let binary = CommandSettings {
            path: Some("/opt/tandem".to_owned()),
            arguments: Some(vec![
                "lsp".to_owned(),
                "--log-level".to_owned(),
                "debug".to_owned(),
            ]),
            env: Some(HashMap::from([
                ("TANDEM_LOG_FILE".to_owned(), "/tmp/t.log".to_owned()),
                ("HOME".to_owned(), "/elsewhere".to_owned()),
            ])),
        };
        let env = vec![
            ("HOME".to_owned(), "/home/me".to_owned()),
            ("PATH".to_owned(), "/usr/bin".to_owned()),
        ];
        let command = server_command("/opt/tandem".to_owned(), Some(&binary), env);
        assert_eq!(command.args, ["lsp", "--log-level", "debug"]);
        assert_eq!(
            command.env,
            [
                ("PATH".to_owned(), "/usr/bin".to_owned()),
                ("HOME".to_owned(), "/elsewhere".to_owned()),
                ("TANDEM_LOG_FILE".to_owned(), "/tmp/t.log".to_owned()),
            ]
        );
    }

    /// A folder of its own under the system's temporary folder, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let path =
                std::env::temp_dir().join(format!("tandem-zed-test-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&path);
            fs::create_dir_all(&path).unwrap();
            Scratch(path)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// GitHub with one release whose archives "unpack" to the files `unpacks`, recording what
    /// the installation asked for.
    struct FakeReleases {
        release: Option<GithubRelease>,
        unpacks: Vec<&'static str>,
        calls: RefCell<Vec<String>>,
    }

    impl FakeReleases {
        fn new(tag: &str, assets: &[&str]) -> Self {
            FakeReleases {
                release: Some(GithubRelease {
                    version: tag.to_owned(),
                    assets: assets
                        .iter()
                        .map(|name| GithubReleaseAsset {
                            name: (*name).to_owned(),
                            download_url: format!(
                                "https://github.com/{REPOSITORY}/releases/download/{tag}/{name}"
                            ),
                        })
                        .collect(),
                }),
                unpacks: vec![EXECUTABLE, CONFINE, "README.md"],
                calls: RefCell::new(Vec::new()),
            }
        }

        fn offline() -> Self {
            FakeReleases {
                release: None,
                unpacks: Vec::new(),
                calls: RefCell::new(Vec::new()),
            }
        }

        fn calls(&self) -> Vec<String> {
            self.calls.borrow().clone()
        }
    }

    impl Releases for FakeReleases {
        fn latest(&self) -> zed::Result<GithubRelease> {
            self.calls.borrow_mut().push("latest".to_owned());
            self.release
                .clone()
                .ok_or_else(|| "network unreachable".to_owned())
        }

        fn download_gzip_tar(&self, url: &str, folder: &str) -> zed::Result<()> {
            self.calls.borrow_mut().push(format!("download {url}"));
            fs::create_dir_all(folder).map_err(|error| error.to_string())?;
            for name in &self.unpacks {
                fs::write(Path::new(folder).join(name), "#!/bin/sh\n")
                    .map_err(|error| error.to_string())?;
            }
            Ok(())
        }

        fn make_executable(&self, file: &str) -> zed::Result<()> {
            let name = Path::new(file).file_name().unwrap().to_string_lossy();
            self.calls.borrow_mut().push(format!("chmod {name}"));
            Ok(())
        }

        fn status(&self, status: LanguageServerInstallationStatus) {
            let status = match status {
                LanguageServerInstallationStatus::None => "none",
                LanguageServerInstallationStatus::Downloading => "downloading",
                LanguageServerInstallationStatus::CheckingForUpdate => "checking",
                LanguageServerInstallationStatus::Failed(_) => "failed",
            };
            self.calls.borrow_mut().push(format!("status {status}"));
        }
    }

    const LINUX: (Os, Architecture) = (Os::Linux, Architecture::X8664);
    const ALL_ASSETS: [&str; 5] = [
        "tandem-0.2.0-x86_64-unknown-linux-musl.tar.gz",
        "tandem-0.2.0-x86_64-unknown-linux-musl.tar.gz.sha256",
        "tandem-0.2.0-aarch64-unknown-linux-musl.tar.gz",
        "tandem-0.2.0-x86_64-apple-darwin.tar.gz",
        "SHA256SUMS",
    ];

    #[test]
    fn the_latest_archive_is_downloaded_once_into_its_version_folder_and_old_ones_go() {
        let root = Scratch::new("install");
        let old = root.0.join("tandem-0.1.0");
        fs::create_dir_all(&old).unwrap();
        fs::write(old.join(EXECUTABLE), "old").unwrap();
        fs::write(root.0.join("unrelated.txt"), "kept").unwrap();

        let releases = FakeReleases::new("v0.2.0", &ALL_ASSETS);
        let path = install(&releases, LINUX, &root.0).unwrap();
        assert_eq!(Path::new(&path), root.0.join("tandem-0.2.0/tandem"));
        assert!(root.0.join("tandem-0.2.0/tandem-confine").is_file());
        assert!(!old.exists(), "the old version was kept");
        assert!(root.0.join("unrelated.txt").is_file());
        assert_eq!(
            releases.calls(),
            [
                "status checking",
                "latest",
                "status downloading",
                "download https://github.com/tandem-lsp/tandem/releases/download/v0.2.0/\
                 tandem-0.2.0-x86_64-unknown-linux-musl.tar.gz",
                "chmod tandem",
                "chmod tandem-confine",
                "status none",
            ]
        );

        // The same release again: nothing downloaded.
        let again = FakeReleases::new("v0.2.0", &ALL_ASSETS);
        assert_eq!(install(&again, LINUX, &root.0).unwrap(), path);
        assert_eq!(again.calls(), ["status checking", "latest", "status none"]);
    }

    #[test]
    fn offline_uses_the_version_already_downloaded_or_says_how_to_install() {
        let root = Scratch::new("offline");
        let error = install(&FakeReleases::offline(), LINUX, &root.0).unwrap_err();
        assert!(error.contains("network unreachable"), "{error}");
        assert!(
            error.contains("npm install -g @tandem-lsp/tandem"),
            "{error}"
        );

        install(&FakeReleases::new("v0.2.0", &ALL_ASSETS), LINUX, &root.0).unwrap();
        let offline = FakeReleases::offline();
        let path = install(&offline, LINUX, &root.0).unwrap();
        assert_eq!(Path::new(&path), root.0.join("tandem-0.2.0/tandem"));
        assert_eq!(offline.calls(), ["status checking", "latest"]);
    }

    #[test]
    fn a_release_without_this_platforms_archive_names_the_one_it_wanted() {
        let root = Scratch::new("no-asset");
        let releases = FakeReleases::new("v0.2.0", &["tandem-0.2.0-x86_64-apple-darwin.tar.gz"]);
        let error = install(&releases, LINUX, &root.0).unwrap_err();
        assert!(
            error.contains("v0.2.0 has no archive tandem-0.2.0-x86_64-unknown-linux-musl.tar.gz"),
            "{error}"
        );
        assert!(version_folders(&root.0).is_empty());
    }

    #[test]
    fn an_archive_without_the_sandbox_launcher_is_not_installed() {
        let root = Scratch::new("no-confine");
        let mut releases = FakeReleases::new("v0.2.0", &ALL_ASSETS);
        releases.unpacks = vec![EXECUTABLE];
        let error = install(&releases, LINUX, &root.0).unwrap_err();
        assert!(error.contains("holds no `tandem-confine`"), "{error}");
        assert!(
            !root.0.join("tandem-0.2.0").exists(),
            "the incomplete folder was kept"
        );
    }

    #[test]
    fn windows_fails_before_asking_github() {
        let root = Scratch::new("windows");
        let releases = FakeReleases::new("v0.2.0", &ALL_ASSETS);
        let error = install(&releases, (Os::Windows, Architecture::X8664), &root.0).unwrap_err();
        assert!(error.contains("does not run on Windows"), "{error}");
        assert!(releases.calls().is_empty(), "{:?}", releases.calls());
    }
}
