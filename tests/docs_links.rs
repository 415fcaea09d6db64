//! The docs stand alone: every relative link in README.md, docs/**/*.md and
//! reports/guarantees.md lands on a file of the repository and, with a `#anchor`, on a
//! heading of it (GitHub's slugs) or an `id` of an HTML page; no page names a file users
//! do not have; and the README's verdict table is the committed report's. External
//! (http, https, mailto) links are not fetched.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// Text no user-facing page may contain: files and folders outside the repository.
const FORBIDDEN: &[&str] = &["DESIGN.md", "CATALOGUE.md", "../shared", "/work/"];

/// What the checker reads: the repository's files by path relative to its root.
trait Files {
    /// Whether `path` (relative, normalised) is a file or folder of the repository.
    fn exists(&self, path: &Path) -> bool;
    /// The text of `path`, when it is a readable text file.
    fn text(&self, path: &Path) -> Option<String>;
}

/// The repository on disk.
struct Disk(PathBuf);

impl Files for Disk {
    fn exists(&self, path: &Path) -> bool {
        self.0.join(path).exists()
    }
    fn text(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(self.0.join(path)).ok()
    }
}

/// Files in memory, for testing the checker itself.
struct Memory(BTreeMap<PathBuf, String>);

impl Files for Memory {
    fn exists(&self, path: &Path) -> bool {
        self.0.contains_key(path) || self.0.keys().any(|file| file.starts_with(path))
    }
    fn text(&self, path: &Path) -> Option<String> {
        self.0.get(path).cloned()
    }
}

/// One link as written: its line and target.
#[derive(Debug)]
struct Link {
    line: usize,
    target: String,
}

/// The lines of `text` outside fenced code blocks (three or more backticks or tildes),
/// with their 1-based numbers.
fn unfenced_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<String> = None;
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let marker: String = line
            .trim_start()
            .chars()
            .take_while(|&c| c == '`' || c == '~')
            .collect();
        if marker.len() >= 3 {
            match &fence {
                None => fence = Some(marker),
                Some(open) if marker.starts_with(open.as_str()) => fence = None,
                Some(_) => {}
            }
            continue;
        }
        if fence.is_none() {
            out.push((index + 1, line));
        }
    }
    out
}

/// The lines of `text` outside fenced code blocks, with their 1-based numbers and the
/// inline code spans blanked (links in code are examples, not links).
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    unfenced_lines(text)
        .into_iter()
        .map(|(n, line)| (n, blank_code_spans(line)))
        .collect()
}

/// `line` with the contents of its backtick code spans replaced by spaces.
fn blank_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(c);
        } else if in_code {
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// Every inline link `[text](target)` and image `![alt](target)` of the prose, and every
/// `href="..."` of inline HTML.
fn links(text: &str) -> Vec<Link> {
    let mut out = Vec::new();
    for (line, prose) in prose_lines(text) {
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let target = after[..end].split_whitespace().next().unwrap_or("");
            let target = target.trim_start_matches('<').trim_end_matches('>');
            out.push(Link {
                line,
                target: target.to_string(),
            });
            rest = &after[end..];
        }
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("href=\"") {
            let after = &rest[at + 6..];
            let end = after.find('"').unwrap_or(after.len());
            out.push(Link {
                line,
                target: after[..end].to_string(),
            });
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchor for a heading's text: markup dropped, lowercase, every character but
/// letters, digits, spaces, `-` and `_` dropped, spaces turned into `-`.
fn slug(heading: &str) -> String {
    let text = strip_link_targets(heading);
    text.chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A heading's rendered text: `[text](url)` becomes `text`.
fn strip_link_targets(heading: &str) -> String {
    let mut out = String::new();
    let mut rest = heading;
    while let Some(at) = rest.find("](") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        rest = match after.find(')') {
            Some(end) => &after[end + 1..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// The anchors a Markdown page has: its headings' slugs (the n-th repeat of a slug gets
/// `-n`) and the `id`/`name` of inline HTML anchors.
fn markdown_anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for (_, line) in unfenced_lines(text) {
        let trimmed = line.trim_start();
        let hashes = trimmed.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            let text = trimmed[hashes..].trim().trim_end_matches('#').trim();
            let base = slug(text);
            let count = seen.entry(base.clone()).or_insert(0);
            let anchor = if *count == 0 {
                base.clone()
            } else {
                format!("{base}-{count}")
            };
            *count += 1;
            anchors.insert(anchor);
        }
        anchors.extend(html_ids(line));
    }
    anchors
}

/// The `id="..."` and `name="..."` attributes in `text`.
fn html_ids(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attribute in [" id=\"", " name=\""] {
        let mut rest = text;
        while let Some(at) = rest.find(attribute) {
            let after = &rest[at + attribute.len()..];
            let end = after.find('"').unwrap_or(after.len());
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

/// `%XX` escapes decoded (GitHub encodes spaces and non-ASCII in anchors that way).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `base/relative` with `.` and `..` resolved; `None` when it climbs out of the root.
fn resolve(base: &Path, relative: &str) -> Option<PathBuf> {
    let mut parts: Vec<String> = Vec::new();
    for component in base.join(relative).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}

/// Whether `anchor` names a line or a range of lines (`L12`, `L12-L20`), which GitHub
/// gives every source file.
fn is_line_anchor(anchor: &str) -> bool {
    anchor.split('-').all(|part| {
        part.strip_prefix('L')
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    })
}

/// What is wrong with the links and text of `page`, one line per problem.
fn check_page(files: &dyn Files, page: &Path, forbid: bool) -> Vec<String> {
    let Some(text) = files.text(page) else {
        return vec![format!("{}: cannot be read", page.display())];
    };
    let mut problems = Vec::new();
    if forbid {
        for (index, line) in text.lines().enumerate() {
            for word in FORBIDDEN {
                if line.contains(word) {
                    problems.push(format!(
                        "{}:{}: names `{word}`, which users do not have",
                        page.display(),
                        index + 1
                    ));
                }
            }
        }
    }
    let folder = page.parent().unwrap_or(Path::new(""));
    for link in links(&text) {
        if let Some(problem) = check_link(files, page, folder, &text, &link.target) {
            problems.push(format!("{}:{}: {problem}", page.display(), link.line));
        }
    }
    problems
}

/// What is wrong with one link of `page`, if anything.
fn check_link(
    files: &dyn Files,
    page: &Path,
    folder: &Path,
    page_text: &str,
    target: &str,
) -> Option<String> {
    let lower = target.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:")
    {
        return None;
    }
    if target.is_empty() {
        return Some("empty link target".to_string());
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(percent_decode(anchor))),
        None => (target, None),
    };
    let resolved = if path.is_empty() {
        page.to_path_buf()
    } else {
        match resolve(folder, &percent_decode(path)) {
            Some(resolved) => resolved,
            None => return Some(format!("`{target}` points outside the repository")),
        }
    };
    if !path.is_empty() && !files.exists(&resolved) {
        return Some(format!("`{target}`: no file {}", resolved.display()));
    }
    let anchor = anchor?;
    let anchors = if resolved == page {
        markdown_anchors(page_text)
    } else if resolved.extension().is_some_and(|e| e == "md") {
        markdown_anchors(&files.text(&resolved)?)
    } else if resolved.extension().is_some_and(|e| e == "html") {
        html_ids(&files.text(&resolved)?).into_iter().collect()
    } else if is_line_anchor(&anchor) {
        return None;
    } else {
        return Some(format!("`{target}`: an anchor into a file that has none"));
    };
    (!anchors.contains(&anchor)).then(|| {
        format!(
            "`{target}`: no heading or id `{anchor}` in {}",
            resolved.display()
        )
    })
}

/// The Markdown files under `folder` (relative to `root`), sorted.
fn markdown_under(root: &Path, folder: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![folder.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let relative = dir.join(entry.file_name());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(relative);
            } else if relative.extension().is_some_and(|e| e == "md") {
                out.push(relative);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_relative_link_of_the_docs_lands() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let disk = Disk(root.clone());
    let mut pages = vec![PathBuf::from("README.md")];
    pages.extend(markdown_under(&root, Path::new("docs")));
    assert!(pages.len() > 10, "the book in docs/ is missing: {pages:?}");
    let mut problems = Vec::new();
    for page in &pages {
        problems.extend(check_page(&disk, page, true));
    }
    // The generated report links into its cells and timelines; users have it too.
    problems.extend(check_page(&disk, Path::new("reports/guarantees.md"), false));
    assert!(
        problems.is_empty(),
        "broken links or outside files:\n{}",
        problems.join("\n")
    );
}

#[test]
fn slugs_follow_github() {
    assert_eq!(
        slug("A reproduced violation, worked through"),
        "a-reproduced-violation-worked-through"
    );
    assert_eq!(
        slug("Fairness (`fair`) and what a lock costs"),
        "fairness-fair-and-what-a-lock-costs"
    );
    assert_eq!(
        slug("On etcd's wire, measured against etcd 3.4"),
        "on-etcds-wire-measured-against-etcd-34"
    );
    assert_eq!(
        slug("Redlock (`redlock`, N = 5 for rows 7–8)"),
        "redlock-redlock-n--5-for-rows-78"
    );
    assert_eq!(
        slug("snake_case and [a link](x.md)"),
        "snake_case-and-a-link"
    );
    let anchors =
        markdown_anchors("# Top\n## Notes\n```\n# not a heading\n```\n## Notes\n## Notes\n");
    let expected: BTreeSet<String> = ["top", "notes", "notes-1", "notes-2"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(anchors, expected);
}

/// A small repository in memory: one good page, and one with every kind of fault.
fn sample() -> Memory {
    let mut files = BTreeMap::new();
    let good = "# Guide\n\n## Set up\n\nSee [set up](#set-up), [the other](other.md#part-two), \
                [code](../src/lib.rs#L10), [a folder](../src) and [web](https://example.com/x#y).\n\
                `[not a link](nowhere.md)`\n\n```\n[nor this](nowhere.md)\n```\n";
    files.insert(PathBuf::from("docs/guide.md"), good.to_string());
    files.insert(
        PathBuf::from("docs/other.md"),
        "# Other\n\n## Part two\n".to_string(),
    );
    files.insert(PathBuf::from("src/lib.rs"), "//! lib\n".to_string());
    let bad = "# Bad\n\n[missing](gone.md)\n[bad anchor](other.md#part-three)\n\
               [bad self](#nowhere)\n[outside](../../etc/passwd)\n[anchor in code](../src/lib.rs#top)\n\
               See DESIGN.md and /work/main.\n";
    files.insert(PathBuf::from("docs/bad.md"), bad.to_string());
    Memory(files)
}

#[test]
fn the_checker_passes_a_good_page() {
    let files = sample();
    assert_eq!(
        check_page(&files, Path::new("docs/guide.md"), true),
        Vec::<String>::new()
    );
}

#[test]
fn the_checker_fails_every_kind_of_broken_link() {
    let files = sample();
    let problems = check_page(&files, Path::new("docs/bad.md"), true);
    let expect = [
        "docs/bad.md:8: names `DESIGN.md`",
        "docs/bad.md:8: names `/work/`",
        "docs/bad.md:3: `gone.md`: no file docs/gone.md",
        "docs/bad.md:4: `other.md#part-three`: no heading or id `part-three`",
        "docs/bad.md:5: `#nowhere`: no heading or id `nowhere`",
        "docs/bad.md:6: `../../etc/passwd` points outside the repository",
        "docs/bad.md:7: `../src/lib.rs#top`: an anchor into a file that has none",
    ];
    for wanted in expect {
        assert!(
            problems.iter().any(|p| p.starts_with(wanted)),
            "missing `{wanted}` in {problems:#?}"
        );
    }
    assert_eq!(problems.len(), expect.len(), "{problems:#?}");
}

/// A table's rows as trimmed cells, its first `columns` only.
fn table_rows(lines: &[&str], columns: usize) -> Vec<Vec<String>> {
    lines
        .iter()
        .filter(|line| line.trim_start().starts_with('|'))
        .map(|line| {
            let cells = line.trim().trim_matches('|').split('|');
            cells
                .take(columns)
                .map(|cell| cell.trim().to_string())
                .collect()
        })
        .collect()
}

/// The README's verdict table, between its markers.
fn readme_verdict(readme: &str) -> Vec<&str> {
    readme
        .lines()
        .skip_while(|line| !line.starts_with("<!-- verdict:"))
        .skip(1)
        .take_while(|line| !line.starts_with("<!-- end of verdict"))
        .collect()
}

/// The report's verdict table: the first table under `## Verdict`.
fn report_verdict(report: &str) -> Vec<&str> {
    report
        .lines()
        .skip_while(|line| line.trim() != "## Verdict")
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .collect()
}

#[test]
fn the_readme_verdict_is_the_reports() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let report =
        std::fs::read_to_string(root.join("reports/guarantees.md")).expect("reports/guarantees.md");
    let ours = table_rows(&readme_verdict(&readme), 3);
    let theirs = table_rows(&report_verdict(&report), 3);
    assert!(
        ours.len() > 2,
        "README.md has no verdict table between its markers"
    );
    assert_eq!(
        ours, theirs,
        "README.md's verdict table is not the first three columns of reports/guarantees.md's \
         verdict: copy them again after a new report"
    );
}

#[test]
fn the_verdict_comparison_sees_a_difference() {
    let readme = "<!-- verdict: x -->\n| lock | a | b |\n|---|---|---|\n| redis | ✓ | 1/200 |\n\
                  <!-- end of verdict -->\n";
    let report = "# R\n\n## Verdict\n\ntext\n\n| lock | a | b | c |\n|---|---|---|---|\n\
                  | redis | ✓ | 2/200 | x |\n\nafter\n";
    let ours = table_rows(&readme_verdict(readme), 3);
    let theirs = table_rows(&report_verdict(report), 3);
    assert_eq!(ours.len(), 3);
    assert_eq!(theirs.len(), 3);
    assert_ne!(ours, theirs);
    assert_eq!(ours[..2], theirs[..2]);
}
