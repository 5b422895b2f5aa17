//! Plain-text tables in aligned columns, for the tables built as rows of
//! cells (phase ratios, baseline comparisons): the first column
//! left-aligned (names), the others right-aligned (numbers).

/// The rows joined in columns as wide as their widest cell, two spaces
/// apart, trailing blanks trimmed; with `rule`, a line of dashes under
/// the first row (the heading). Rows may be shorter than the first.
pub fn layout(cells: &[Vec<String>], rule: bool) -> String {
    let cols = cells.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols)
        .map(|i| cells.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (n, row) in cells.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| if i == 0 { format!("{c:<w$}", w = widths[i]) } else { format!("{c:>w$}", w = widths[i]) })
            .collect();
        out += line.join("  ").trim_end();
        out.push('\n');
        if n == 0 && rule {
            out += &"-".repeat(widths.iter().sum::<usize>() + 2 * cols.saturating_sub(1));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::layout;

    #[test]
    fn aligns_names_left_and_numbers_right() {
        let cells: Vec<Vec<String>> = [vec!["series", "p50"], vec!["a", "1.25"], vec!["longer", "3"]]
            .iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect();
        assert_eq!(layout(&cells, false), "series   p50\na       1.25\nlonger     3\n");
        assert_eq!(layout(&cells, true), "series   p50\n------------\na       1.25\nlonger     3\n");
    }
}
