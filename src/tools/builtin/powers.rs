//! Powers for the calculator as people and models write them. evalexpr knows only `^` and
//! chains it left to right (`2 ^ 3 ^ 2` = 64); Python, JavaScript and mathematics read `**`
//! as a power too, and a chain right to left (`2 ** 3 ** 2` = 512). So before parsing, `**`
//! becomes `^` and every chain of two or more powers gets explicit parentheses:
//! `a ^ b ^ c` → `a ^ (b ^ c)`. A sign in front of a chain stays outside it, as evalexpr reads
//! `^` before a unary minus: `-2 ** 2` = `-2 ^ 2` = -4, as in Python.

/// One piece of an expression at one parenthesis depth, with the spaces before it.
#[derive(Debug)]
enum Piece {
    /// A number, a name, a function call or a parenthesised group.
    Operand(String),
    /// `^` or `**`.
    Power,
    /// Anything else: another operator, a comma, a stray character.
    Other(String),
}

/// `expression` with `**` written `^` and chains of powers grouped to the right.
pub(super) fn rewrite(expression: &str) -> String {
    let chars: Vec<char> = expression.chars().collect();
    let mut pos = 0;
    let mut out = level(&chars, &mut pos);
    // An unmatched `)` ended the top level early: keep the rest for evalexpr to refuse.
    while pos < chars.len() {
        out.push(chars[pos]);
        pos += 1;
        out.push_str(&level(&chars, &mut pos));
    }
    out
}

/// Rewrites from `pos` to the `)` closing this level (left unconsumed) or the end.
fn level(chars: &[char], pos: &mut usize) -> String {
    let mut pieces: Vec<Piece> = Vec::new();
    while *pos < chars.len() {
        let space_start = *pos;
        while *pos < chars.len() && chars[*pos].is_whitespace() {
            *pos += 1;
        }
        let space: String = chars[space_start..*pos].iter().collect();
        let Some(&c) = chars.get(*pos) else {
            pieces.push(Piece::Other(space));
            break;
        };
        if c == ')' {
            pieces.push(Piece::Other(space));
            break;
        }
        let piece = if c == '(' {
            *pos += 1;
            let inner = level(chars, pos);
            let close = if chars.get(*pos) == Some(&')') {
                *pos += 1;
                ")"
            } else {
                ""
            };
            let group = format!("({inner}{close}");
            // A group right after a name is that function's argument list.
            if space.is_empty() {
                if let Some(Piece::Operand(name)) = pieces.last_mut() {
                    if name.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                        name.push_str(&group);
                        continue;
                    }
                }
            }
            Piece::Operand(format!("{space}{group}"))
        } else if c == '^' || (c == '*' && chars.get(*pos + 1) == Some(&'*')) {
            *pos += if c == '^' { 1 } else { 2 };
            Piece::Power
        } else if is_word(c) {
            Piece::Operand(format!("{space}{}", word(chars, pos)))
        } else {
            *pos += 1;
            Piece::Other(format!("{space}{c}"))
        };
        pieces.push(piece);
    }
    join(pieces)
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | ':')
}

/// A number or a name from `pos`; a number's exponent sign (`1e-5`) belongs to it.
fn word(chars: &[char], pos: &mut usize) -> String {
    let start = *pos;
    while *pos < chars.len() {
        let c = chars[*pos];
        let exponent_sign = matches!(c, '+' | '-')
            && chars[start].is_ascii_digit()
            && matches!(chars[*pos - 1], 'e' | 'E')
            && chars.get(*pos + 1).is_some_and(char::is_ascii_digit);
        if !is_word(c) && !exponent_sign {
            break;
        }
        *pos += 1;
    }
    chars[start..*pos].iter().collect()
}

/// The pieces as text, each chain `a ^ b ^ c` written `a ^ (b ^ c)`.
fn join(pieces: Vec<Piece>) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < pieces.len() {
        match &pieces[i] {
            Piece::Operand(first) => {
                let (chain, next) = chain(&pieces, i + 1);
                out.push_str(first);
                out.push_str(&nest(&chain));
                i = next;
            }
            Piece::Power => {
                out.push('^');
                i += 1;
            }
            Piece::Other(text) => {
                out.push_str(text);
                i += 1;
            }
        }
    }
    out
}

/// The operands (each with its signs) of the powers that follow an operand, from `i`, and
/// where the chain ends.
fn chain(pieces: &[Piece], mut i: usize) -> (Vec<String>, usize) {
    let mut operands = Vec::new();
    while let Some(Piece::Power) = pieces.get(i) {
        let mut j = i + 1;
        let mut signs = String::new();
        while let Some(Piece::Other(sign)) = pieces.get(j) {
            if !matches!(sign.trim(), "-" | "+") {
                break;
            }
            signs.push_str(sign.trim());
            j += 1;
        }
        let Some(Piece::Operand(operand)) = pieces.get(j) else {
            break;
        };
        operands.push(format!("{signs}{}", operand.trim_start()));
        i = j + 1;
    }
    (operands, i)
}

/// ` ^ b`, or ` ^ (b ^ (c ^ d))` for a longer chain.
fn nest(operands: &[String]) -> String {
    let Some((last, rest)) = operands.split_last() else {
        return String::new();
    };
    let mut acc = last.clone();
    for operand in rest.iter().skip(1).rev() {
        acc = format!("({operand} ^ {acc})");
    }
    match rest.first() {
        None => format!(" ^ {acc}"),
        Some(first) => format!(" ^ ({first} ^ {acc})"),
    }
}
