//! `rtick generate-assets DIR` (hidden from help): the man pages and the
//! shell completions, generated from the clap definitions themselves, so that
//! every subcommand — including any added later — gets its page and its
//! completions with no hand-written copy to fall out of date. Packaging
//! (`scripts/package`) runs it before `cargo deb` packs DIR; normal builds
//! pay nothing for it beyond two small crates.
//!
//! DIR/man/man1/rtick.1, DIR/man/man1/rtick-SUBCOMMAND.1 …,
//! DIR/completions/rtick.bash, DIR/completions/_rtick (zsh),
//! DIR/completions/rtick.fish.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{AssetsArgs, Cli};
use crate::export::atomic::AtomicFile;

/// The completion scripts: shell and file name, as each shell looks them up
/// (bash-completion by command name, zsh `_command` on $fpath, fish
/// `command.fish`).
const COMPLETIONS: [(Shell, &str); 3] =
    [(Shell::Bash, "rtick.bash"), (Shell::Zsh, "_rtick"), (Shell::Fish, "rtick.fish")];

pub fn run(args: &AssetsArgs) -> Result<()> {
    // The `help` subcommand would get a page of its own; --help covers it.
    let mut cmd = Cli::command().disable_help_subcommand(true);
    // build() gives subcommands their display names (`rtick-measure`), which
    // name the pages and appear in their synopses.
    cmd.build();
    let man_dir = args.dir.join("man").join("man1");
    let completion_dir = args.dir.join("completions");
    for d in [&man_dir, &completion_dir] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let mut pages = Vec::new();
    man_pages(&cmd, &man_dir, &mut pages)?;
    let mut visible = without_hidden(&cmd);
    for (shell, name) in COMPLETIONS {
        let mut text = Vec::new();
        clap_complete::generate(shell, &mut visible, "rtick", &mut text);
        write(&completion_dir.join(name), &text)?;
    }
    println!(
        "{} man pages in {}, completions for bash, zsh and fish in {}",
        pages.len(),
        man_dir.display(),
        completion_dir.display()
    );
    Ok(())
}

/// Writes the page of `cmd` and of each visible subcommand, depth first;
/// collects the file names.
fn man_pages(cmd: &clap::Command, dir: &Path, pages: &mut Vec<String>) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        man_pages(sub, dir, pages)?;
    }
    let man = clap_mangen::Man::new(cmd.clone())
        .manual("rtick manual")
        .source(format!("rtick {}", env!("CARGO_PKG_VERSION")));
    let mut text = Vec::new();
    man.render(&mut text).context("rendering a man page")?;
    let name = man.get_filename();
    write(&dir.join(&name), &text)?;
    pages.push(name);
    Ok(())
}

/// `cmd` (built) without its hidden subcommands and options: clap_complete
/// offers everything it is given, and a hidden command (this one, the test
/// build's `--mock-*` options) is not for users to be offered. clap cannot
/// remove a subcommand, so the tree is assembled anew from the visible parts;
/// the built parts already carry the propagated --help/--version, so the new
/// command adds none of its own. (clap takes names as `&'static str`
/// without its `string` feature: this runs once per process, so the few
/// names are leaked rather than the feature added for everyone.)
fn without_hidden(cmd: &clap::Command) -> clap::Command {
    let mut out = clap::Command::new(&*cmd.get_name().to_owned().leak())
        .disable_help_flag(true)
        .disable_version_flag(true)
        .disable_help_subcommand(true)
        .args(cmd.get_arguments().filter(|a| !a.is_hide_set()).cloned())
        .subcommands(cmd.get_subcommands().filter(|s| !s.is_hide_set()).map(without_hidden));
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    if let Some(version) = cmd.get_version() {
        out = out.version(&*version.to_owned().leak());
    }
    out
}

/// Writes one file whole, through the atomic writer.
fn write(path: &Path, text: &[u8]) -> Result<()> {
    let out = AtomicFile::create("generate-assets", path).map_err(anyhow::Error::msg)?;
    out.file().write_all(text).with_context(|| format!("writing {}", path.display()))?;
    out.commit()
}
