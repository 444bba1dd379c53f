//! Reading `GET /metrics` as Prometheus does: the text exposition format
//! parsed into samples (name, labels, value), written from the format's
//! description alone, with look-ups by name and labels.

use std::collections::BTreeMap;

/// One sample line: `name{label="value",…} value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// One scrape: the raw text and its samples.
#[derive(Debug, Clone)]
pub struct Scrape {
    pub text: String,
    pub samples: Vec<Sample>,
}

impl Scrape {
    /// `GET url`: expects 200 and the text format's content type.
    ///
    /// # Panics
    ///
    /// When the answer is anything else, or a line does not parse.
    pub async fn get(client: &reqwest::Client, url: &str) -> Scrape {
        let response = client
            .get(url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
        let status = response.status();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let text = response.text().await.expect("the metrics text");
        assert_eq!(status, 200, "GET {url}: {text}");
        assert!(
            content_type.starts_with("text/plain") && content_type.contains("version=0.0.4"),
            "GET {url}: content type `{content_type}`"
        );
        Scrape::parse(&text)
    }

    /// Parses the text format (comments skipped).
    ///
    /// # Panics
    ///
    /// On a line that is not a sample.
    pub fn parse(text: &str) -> Scrape {
        let samples = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(|line| parse_sample(line).unwrap_or_else(|| panic!("not a sample line: `{line}`")))
            .collect();
        Scrape {
            text: text.to_owned(),
            samples,
        }
    }

    /// The samples of `name` whose labels include every pair of `labels`.
    pub fn matching<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).is_some_and(|have| have == v))
        })
    }

    /// The one sample of `name` with exactly `labels`, if present.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .find(|s| {
                s.name == name
                    && s.labels.len() == labels.len()
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.get(*k).is_some_and(|have| have == v))
            })
            .map(|s| s.value)
    }

    /// The sum of the samples of `name` whose labels include `labels`
    /// (0 when there is none).
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.matching(name, labels).map(|s| s.value).sum()
    }

    /// Whether any sample of `name` is present.
    pub fn has(&self, name: &str) -> bool {
        self.samples.iter().any(|s| s.name == name)
    }
}

fn parse_sample(line: &str) -> Option<Sample> {
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace())?;
    let name = line[..name_end].to_owned();
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(inner)?;
        labels = parsed;
        rest = after;
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        other => other.parse().ok()?,
    };
    Some(Sample {
        name,
        labels,
        value,
    })
}

/// Parses `k="v",k2="v2"}` and returns the labels and what follows `}`.
fn parse_labels(mut text: &str) -> Option<(BTreeMap<String, String>, &str)> {
    let mut labels = BTreeMap::new();
    loop {
        text = text.trim_start_matches([',', ' ']);
        if let Some(after) = text.strip_prefix('}') {
            return Some((labels, after));
        }
        let eq = text.find('=')?;
        let key = text[..eq].trim().to_owned();
        text = text[eq + 1..].strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = text.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                '"' => break i,
                other => value.push(other),
            }
        };
        labels.insert(key, value);
        text = &text[end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_with_braces_quotes_and_escapes_parse() {
        let scrape = Scrape::parse(
            "# HELP x help\n# TYPE x counter\n\
             x_total{route=\"/a/{id}\",q=\"say \\\"hi\\\"\\n\"} 3\n\
             y 1.5\n\
             h_bucket{le=\"+Inf\"} 2\n",
        );
        assert_eq!(
            scrape.value("x_total", &[("route", "/a/{id}"), ("q", "say \"hi\"\n")]),
            Some(3.0)
        );
        assert_eq!(scrape.value("y", &[]), Some(1.5));
        assert_eq!(scrape.sum("h_bucket", &[("le", "+Inf")]), 2.0);
        assert_eq!(scrape.value("x_total", &[("route", "/a/{id}")]), None);
        assert!(!scrape.has("z"));
    }
}
