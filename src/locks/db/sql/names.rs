//! The names of a select list's columns as MariaDB gives them: an item without an
//! alias is named by its text exactly as the statement wrote it (`GET_LOCK('a',  1)`,
//! `@@SESSION.autocommit`), which the parsed tree no longer has, so the items are cut
//! out of the statement's tokens.

use sqlparser::dialect::MySqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Location, Token, Tokenizer};

/// Words that end a select list at nesting depth 0.
const LIST_ENDS: [Keyword; 11] = [
    Keyword::FROM,
    Keyword::WHERE,
    Keyword::LIMIT,
    Keyword::FOR,
    Keyword::ORDER,
    Keyword::GROUP,
    Keyword::HAVING,
    Keyword::INTO,
    Keyword::LOCK,
    Keyword::UNION,
    Keyword::WINDOW,
];

/// The texts of the first `SELECT`'s items, in order (empty when it cannot be read).
pub(crate) fn select_item_texts(sql: &str) -> Vec<String> {
    let Ok(tokens) = Tokenizer::new(&MySqlDialect {}, sql).tokenize_with_location() else {
        return Vec::new();
    };
    let mut it = tokens
        .iter()
        .skip_while(|t| !matches!(&t.token, Token::Word(w) if w.keyword == Keyword::SELECT));
    if it.next().is_none() {
        return Vec::new();
    }
    let mut items = Vec::new();
    let mut span: Option<(Location, Location)> = None;
    let mut depth = 0usize;
    for t in it {
        match &t.token {
            Token::Whitespace(_) => continue,
            Token::EOF | Token::SemiColon => break,
            Token::Word(w) if depth == 0 && LIST_ENDS.contains(&w.keyword) => break,
            Token::Comma if depth == 0 => {
                items.push(span.take());
                continue;
            }
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            _ => {}
        }
        span = Some(match span {
            None => (t.span.start, t.span.end),
            Some((start, _)) => (start, t.span.end),
        });
    }
    items.push(span);
    items
        .into_iter()
        .map(|s| s.map_or_else(String::new, |(a, b)| slice(sql, a, b)))
        .collect()
}

/// The text between two token locations (line and column count from 1, in chars).
fn slice(sql: &str, start: Location, end: Location) -> String {
    match (offset(sql, start), offset(sql, end)) {
        (Some(a), Some(b)) if a <= b => sql[a..b].to_string(),
        _ => String::new(),
    }
}

fn offset(sql: &str, at: Location) -> Option<usize> {
    let mut line_start = 0;
    for _ in 1..at.line {
        line_start += sql[line_start..].find('\n')? + 1;
    }
    let line = &sql[line_start..];
    let col = (at.column as usize).checked_sub(1)?;
    match line.char_indices().nth(col) {
        Some((i, _)) => Some(line_start + i),
        None if line.chars().count() == col => Some(line_start + line.len()),
        None => None,
    }
}
