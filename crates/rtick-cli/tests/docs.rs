//! The documentation cannot drift from the command line: docs/options.md
//! has a section per subcommand of `rtick --help`, and each section lists
//! exactly the long options that subcommand's `--help` prints (help and
//! version aside). Every relative link of the documentation resolves.

mod common;
use common::*;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn help(args: &[&str]) -> String {
    let o = rtick(args);
    ok(&o);
    stdout(&o)
}

/// The lines of `help` under the heading `title` (e.g. "Options:"), up to
/// the next blank line that is followed by a heading or the end.
fn section<'a>(help: &'a str, title: &str) -> Vec<&'a str> {
    help.lines().skip_while(|l| *l != title).skip(1).take_while(|l| l.is_empty() || l.starts_with(' ')).collect()
}

/// The subcommands `rtick --help` lists (`help` itself aside): the first
/// word of each line indented by two (descriptions wrap further in).
fn subcommands() -> BTreeSet<String> {
    section(&help(&["--help"]), "Commands:")
        .iter()
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The first `--name` in `text`, without its dashes.
fn long_options(text: &str) -> Vec<String> {
    text.match_indices("--")
        .filter(|(i, _)| *i == 0 || !text[..*i].ends_with(|c: char| c.is_alphanumeric() || c == '-'))
        .map(|(i, _)| text[i + 2..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect::<String>())
        .filter(|name| !name.is_empty())
        .collect()
}

/// The long options `rtick CMD --help` prints: the `--name` of each line
/// that starts an option, `  -x, --name …` or `      --name …` (clap's
/// indents; a description's continuation lines are indented further).
fn options_of(cmd: &str) -> BTreeSet<String> {
    let starts_option = |l: &&str| l.starts_with("      --") || (l.starts_with("  -") && l.get(4..6) == Some(", "));
    section(&help(&[cmd, "--help"]), "Options:")
        .into_iter()
        .filter(starts_option)
        .filter_map(|l| long_options(l.trim_start().split("  ").next().unwrap_or("")).into_iter().next())
        .filter(|name| name != "help" && name != "version")
        .collect()
}

/// docs/options.md: per `## \`rtick CMD\`` section, the long options named
/// in the first cell of its table rows (`| \`-x\`, \`--name VALUE\` | … |`).
fn documented(text: &str) -> Vec<(String, Vec<String>)> {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("## `rtick ") {
            sections.push((rest.trim_end_matches('`').to_string(), Vec::new()));
        } else if let (Some(cell), Some((_, options))) = (line.strip_prefix("| `"), sections.last_mut()) {
            let first = cell.split(" | ").next().unwrap_or("");
            options.extend(long_options(first));
        }
    }
    sections
}

#[test]
fn options_md_lists_every_option_of_every_subcommand_and_no_other() {
    let text = std::fs::read_to_string(repo_root().join("docs/options.md")).expect("docs/options.md");
    let docs = documented(&text);
    let mut problems = Vec::new();
    let commands = subcommands();
    assert!(commands.contains("measure") && commands.len() >= 5, "subcommands read from rtick --help: {commands:?}");
    let sections: BTreeSet<String> = docs.iter().map(|(c, _)| c.clone()).collect();
    for missing in commands.difference(&sections) {
        problems.push(format!("no section \"## `rtick {missing}`\""));
    }
    for extra in sections.difference(&commands) {
        problems.push(format!("section `rtick {extra}`: no such subcommand"));
    }
    for (cmd, listed) in docs.iter().filter(|(c, _)| commands.contains(c)) {
        let actual = options_of(cmd);
        let listed_set: BTreeSet<String> = listed.iter().cloned().collect();
        if listed_set.len() != listed.len() {
            problems.push(format!("rtick {cmd}: an option is listed twice"));
        }
        for o in actual.difference(&listed_set) {
            problems.push(format!("rtick {cmd} --{o}: not documented"));
        }
        for o in listed_set.difference(&actual) {
            problems.push(format!("rtick {cmd} --{o}: documented, but rtick {cmd} --help has no such option"));
        }
    }
    assert!(problems.is_empty(), "docs/options.md is out of date:\n{}", problems.join("\n"));
}

/// The relative link targets (`](path)` or `](path#anchor)`) of a Markdown text.
fn relative_links(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(i, _)| text[i + 2..].split(')').next())
        .map(|t| t.split('#').next().unwrap_or("").to_string())
        .filter(|t| !t.is_empty() && !t.contains("://") && !t.starts_with("mailto:"))
        .collect()
}

/// The Markdown pages: README, ARCHITECTURE, BENCHMARKS and docs/.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md"), root.join("ARCHITECTURE.md"), root.join("BENCHMARKS.md")];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let path = entry.expect("docs/ entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    pages
}

/// The list items of a Markdown text that follow a paragraph's line
/// directly (outside code blocks): the pages start a list after a blank
/// line or its introducing sentence ends with a colon, so such an item is
/// the rest of a list that text was put into the middle of.
fn items_after_a_paragraph(text: &str) -> Vec<String> {
    let (mut code, mut prev, mut found) = (false, "", Vec::new());
    for line in text.lines() {
        code ^= line.starts_with("```");
        let paragraph = !prev.is_empty() && !prev.starts_with(['-', ' ', '#', '|', '`', '*']) && !prev.ends_with(':');
        if !code && line.starts_with("- ") && paragraph {
            found.push(line.to_string());
        }
        prev = line;
    }
    found
}

#[test]
fn no_list_is_split_by_other_text() {
    let root = repo_root();
    let mut split = Vec::new();
    for page in pages(&root).iter().filter(|p| p.exists()) {
        let text = std::fs::read_to_string(page).expect("a page");
        for item in items_after_a_paragraph(&text) {
            split.push(format!("{}: {item}", page.strip_prefix(&root).unwrap_or(page).display()));
        }
    }
    assert!(split.is_empty(), "list items cut from their list by other text:\n{}", split.join("\n"));
    assert_eq!(items_after_a_paragraph("- a\n\nSection.\n- b\n"), ["- b"]);
    assert!(items_after_a_paragraph("It reads:\n- a\n- b\n\n```\nx\n- y\n```\n").is_empty());
}

#[test]
fn documentation_links_resolve() {
    let root = repo_root();
    let pages = pages(&root);
    let mut broken = Vec::new();
    for page in pages.iter().filter(|p| p.exists()) {
        let text = std::fs::read_to_string(page).expect("a page");
        for link in relative_links(&text) {
            if !page.parent().expect("a directory").join(&link).exists() {
                broken.push(format!("{}: {link}", page.strip_prefix(&root).unwrap_or(page).display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing:\n{}", broken.join("\n"));
}

#[test]
fn the_parsers_read_what_they_are_given() {
    assert_eq!(long_options("`-m`, `--mechanism NAME[,NAME…]`, see --no-mlock"), ["mechanism", "no-mlock"]);
    assert_eq!(long_options("a--b --"), Vec::<String>::new());
    let md = "## `rtick a`\n\n| option | what |\n| --- | --- |\n| `--x N` | with --y |\n| `-z`, `--zz` | z |\n## `rtick b`\n";
    assert_eq!(documented(md), [("a".to_string(), vec!["x".to_string(), "zz".to_string()]), ("b".to_string(), vec![])]);
    assert_eq!(relative_links("[a](docs/a.md#x) [b](https://x.org) [c](#here)"), ["docs/a.md"]);
}
