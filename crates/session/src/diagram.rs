//! A debate drawn as a diagram: its argument graph (each argument with its seat and score,
//! supports and attacks between them), who saw whom (the topology the debate announced), and
//! a code debate's versions, as Mermaid (`flowchart`) or Graphviz DOT text. Pure: it reads a
//! stored debate's derived views and event log, and writes text.

use crate::argue::{Argument, Edge};
use crate::debate::{Event, Relation, Seat};
use std::fmt::Write as _;

/// What a diagram is drawn from.
pub struct Drawn<'a> {
    pub id: &'a str,
    pub seats: &'a [Seat],
    pub arguments: &'a [Argument],
    pub relations: &'a [Edge],
    /// The debate's event log: its `topology` and `version` events are drawn.
    pub events: &'a [Event],
}

/// The diagram languages moot writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    Mermaid,
    Dot,
}

/// How long an argument's text may run in a node before it is cut.
const LABEL_CHARS: usize = 60;

/// The diagram as text in `language`: one graph with a part for the arguments, one for who
/// saw whom, and one for a code debate's versions when it has any.
pub fn draw(drawn: &Drawn<'_>, language: Language) -> String {
    let parts = Parts::of(drawn);
    match language {
        Language::Mermaid => mermaid(drawn.id, &parts),
        Language::Dot => dot(drawn.id, &parts),
    }
}

/// A node: its id (safe in both languages) and its label.
struct Node {
    id: String,
    label: String,
}

/// An edge and how it is drawn.
struct Link {
    from: String,
    to: String,
    label: &'static str,
    style: Style,
}

#[derive(Clone, Copy)]
enum Style {
    Support,
    Rebut,
    Undercut,
    Plain,
}

/// A titled part of the diagram: nodes (grouped, when a group has a title) and links.
struct Part {
    key: &'static str,
    title: String,
    groups: Vec<(Option<String>, Vec<Node>)>,
    links: Vec<Link>,
}

struct Parts(Vec<Part>);

impl Parts {
    fn of(drawn: &Drawn<'_>) -> Parts {
        let mut parts = vec![arguments(drawn), topology(drawn)];
        parts.extend(versions(drawn));
        Parts(parts)
    }
}

/// The argument graph: a group per seat, an edge per relation.
fn arguments(drawn: &Drawn<'_>) -> Part {
    let mut groups: Vec<(Option<String>, Vec<Node>)> = Vec::new();
    for argument in drawn.arguments {
        let title = seat_title(drawn.seats, &argument.seat);
        let node = Node {
            id: node_id("arg", &argument.id),
            label: format!(
                "{} ({:.2}{}) {}",
                argument.id,
                argument.score,
                argument.withdrawn_clause(),
                cut(&argument.text)
            ),
        };
        match groups
            .iter_mut()
            .find(|(t, _)| t.as_deref() == Some(&title))
        {
            Some((_, nodes)) => nodes.push(node),
            None => groups.push((Some(title), vec![node])),
        }
    }
    let links = drawn
        .relations
        .iter()
        .map(|edge| {
            let (label, style) = match edge.kind {
                Relation::Support => ("supports", Style::Support),
                Relation::Rebut => ("rebuts", Style::Rebut),
                Relation::Undercut => ("undercuts", Style::Undercut),
            };
            Link {
                from: node_id("arg", &edge.from),
                to: node_id("arg", &edge.to),
                label,
                style,
            }
        })
        .collect();
    Part {
        key: "arguments",
        title: "Arguments (id, gradual score)".into(),
        groups,
        links,
    }
}

/// Who saw whom: the topology the debate announced (every seat sees every other without one).
fn topology(drawn: &Drawn<'_>) -> Part {
    let announced = drawn.events.iter().rev().find_map(|event| match event {
        Event::Topology { topology, sees } => Some((topology.clone(), sees.clone())),
        _ => None,
    });
    let ids: Vec<String> = drawn.seats.iter().map(|s| s.id.clone()).collect();
    let (name, sees) = announced.unwrap_or_else(|| {
        let everyone = ids
            .iter()
            .map(|viewer| {
                let others = ids.iter().filter(|s| *s != viewer).cloned().collect();
                (viewer.clone(), others)
            })
            .collect();
        ("mesh".to_string(), everyone)
    });
    let nodes = drawn
        .seats
        .iter()
        .map(|seat| Node {
            id: node_id("seat", &seat.id),
            label: seat_title(drawn.seats, &seat.id),
        })
        .collect();
    let mut links = Vec::new();
    for (viewer, seen) in &sees {
        for speaker in seen.iter().filter(|s| *s != viewer) {
            links.push(Link {
                from: node_id("seat", viewer),
                to: node_id("seat", speaker),
                label: "sees",
                style: Style::Plain,
            });
        }
    }
    Part {
        key: "topology",
        title: format!("Who sees whom ({name})"),
        groups: vec![(None, nodes)],
        links,
    }
}

/// A code debate's versions, in order, each with the phase that wrote it and whether its hooks
/// passed; none for other debates.
fn versions(drawn: &Drawn<'_>) -> Option<Part> {
    let versions: Vec<(u32, &str, Option<bool>)> = drawn
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Version {
                number,
                phase,
                passes,
                ..
            } => Some((*number, phase.as_str(), *passes)),
            _ => None,
        })
        .collect();
    if versions.is_empty() {
        return None;
    }
    let nodes = versions
        .iter()
        .map(|(number, phase, passes)| Node {
            id: node_id("version", &number.to_string()),
            label: format!(
                "v{number} {phase} {}",
                match passes {
                    Some(true) => "passes",
                    Some(false) => "fails",
                    None => "untested",
                }
            ),
        })
        .collect();
    let links = versions
        .windows(2)
        .map(|pair| Link {
            from: node_id("version", &pair[0].0.to_string()),
            to: node_id("version", &pair[1].0.to_string()),
            label: "then",
            style: Style::Plain,
        })
        .collect();
    Some(Part {
        key: "versions",
        title: "Versions".into(),
        groups: vec![(None, nodes)],
        links,
    })
}

fn seat_title(seats: &[Seat], id: &str) -> String {
    match seats.iter().find(|s| s.id == id) {
        Some(seat) => format!("{} {}", seat.id, seat.perspective),
        None => id.to_string(),
    }
}

/// An id both languages take: letters, digits and underscores, after a prefix.
fn node_id(prefix: &str, id: &str) -> String {
    let safe: String = id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{prefix}_{safe}")
}

/// A label's text on one line, sanitized, cut to `LABEL_CHARS`.
fn cut(text: &str) -> String {
    let clean = crate::sanitize::clean(text);
    let one_line = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= LABEL_CHARS {
        one_line
    } else {
        let kept: String = one_line.chars().take(LABEL_CHARS - 1).collect();
        format!("{kept}…")
    }
}

/// A label inside Mermaid's `["…"]`: quotes and angle brackets as entities, and `#` and `%`
/// too, so a label can neither spell an entity of its own (`#60;img …#62;` would render as
/// `<img …>`) nor a directive (`%%{init: …}%%`). `#` goes first: the entities add it.
fn mermaid_label(text: &str) -> String {
    text.replace('#', "#35;")
        .replace('%', "#37;")
        .replace('"', "#quot;")
        .replace('<', "#lt;")
        .replace('>', "#gt;")
}

fn mermaid(id: &str, parts: &Parts) -> String {
    // The diagram's type comes first: a comment before it is not taken by every renderer.
    let mut out =
        format!("flowchart TB\n  %% moot debate {id}: its arguments, who saw whom, its versions\n");
    for part in &parts.0 {
        let _ = writeln!(
            out,
            "  subgraph {}[\"{}\"]",
            part.key,
            mermaid_label(&part.title)
        );
        for (index, (title, nodes)) in part.groups.iter().enumerate() {
            let indent = if title.is_some() { "      " } else { "    " };
            if let Some(title) = title {
                let _ = writeln!(
                    out,
                    "    subgraph {}_{index}[\"{}\"]",
                    part.key,
                    mermaid_label(title)
                );
            }
            for node in nodes {
                let _ = writeln!(
                    out,
                    "{indent}{}[\"{}\"]",
                    node.id,
                    mermaid_label(&node.label)
                );
            }
            if title.is_some() {
                out.push_str("    end\n");
            }
        }
        out.push_str("  end\n");
    }
    for link in parts.0.iter().flat_map(|p| &p.links) {
        let arrow = match link.style {
            Style::Support | Style::Plain => "-->",
            Style::Rebut => "--x",
            Style::Undercut => "-.-x",
        };
        let _ = writeln!(out, "  {} {arrow}|{}| {}", link.from, link.label, link.to);
    }
    out
}

/// A label inside DOT's double quotes.
fn dot_label(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

fn dot(id: &str, parts: &Parts) -> String {
    let mut out = format!(
        "// moot debate {id}: its arguments, who saw whom, its versions\ndigraph moot {{\n  rankdir=TB;\n  node [shape=box];\n"
    );
    for part in &parts.0 {
        let _ = writeln!(
            out,
            "  subgraph cluster_{} {{\n    label=\"{}\";",
            part.key,
            dot_label(&part.title)
        );
        for (index, (title, nodes)) in part.groups.iter().enumerate() {
            if let Some(title) = title {
                let _ = writeln!(
                    out,
                    "    subgraph cluster_{}_{index} {{\n      label=\"{}\";",
                    part.key,
                    dot_label(title)
                );
            }
            for node in nodes {
                let _ = writeln!(
                    out,
                    "      {} [label=\"{}\"];",
                    node.id,
                    dot_label(&node.label)
                );
            }
            if title.is_some() {
                out.push_str("    }\n");
            }
        }
        out.push_str("  }\n");
    }
    for link in parts.0.iter().flat_map(|p| &p.links) {
        let style = match link.style {
            Style::Support | Style::Plain => "solid",
            Style::Rebut => "bold",
            Style::Undercut => "dashed",
        };
        let (from, to, label) = (&link.from, &link.to, &link.label);
        let _ = writeln!(out, "  {from} -> {to} [label=\"{label}\", style={style}];");
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seat(id: &str, perspective: &str) -> Seat {
        Seat {
            id: id.into(),
            perspective: perspective.into(),
            priorities: Vec::new(),
            trade_offs: String::new(),
            stance: String::new(),
            provider: None,
            model: None,
        }
    }

    fn argument(id: &str, seat: &str, text: &str) -> Argument {
        Argument {
            id: id.into(),
            seat: seat.into(),
            round: 1,
            text: text.into(),
            score: 0.5,
            retracted: false,
            struck: false,
            conceded_by: Vec::new(),
            challenged_by: Vec::new(),
        }
    }

    fn edge(from: &str, to: &str, kind: Relation) -> Edge {
        Edge {
            from: from.into(),
            to: to.into(),
            kind,
        }
    }

    /// Issue 25 item 7: a node for every argument (in its seat's group), an edge for every
    /// relation, the topology the debate announced, a code debate's versions; labels that
    /// cannot break the syntax.
    #[test]
    fn every_argument_is_a_node_and_every_relation_an_edge() {
        let seats = [
            seat("A", "Operational Simplicity"),
            seat("B", "Performance"),
        ];
        let arguments = [
            argument("A1.1", "A", "Keep \"one\" store <simple>"),
            argument("B1.1", "B", "Redis is faster"),
            argument("B1.2", "B", &"long ".repeat(40)),
        ];
        let relations = [
            edge("B1.2", "B1.1", Relation::Support),
            edge("A1.1", "B1.1", Relation::Rebut),
            edge("B1.1", "A1.1", Relation::Undercut),
        ];
        let events = [
            Event::Topology {
                topology: "chain".into(),
                sees: vec![
                    ("B".into(), vec!["A".into()]),
                    ("A".into(), vec!["B".into()]),
                ],
            },
            Event::Version {
                number: 1,
                phase: "proposal".into(),
                summary: "s".into(),
                passes: Some(false),
                diff: String::new(),
            },
            Event::Version {
                number: 2,
                phase: "revision".into(),
                summary: "s".into(),
                passes: Some(true),
                diff: String::new(),
            },
        ];
        let drawn = Drawn {
            id: "DEB-diagram1",
            seats: &seats,
            arguments: &arguments,
            relations: &relations,
            events: &events,
        };
        let mermaid = draw(&drawn, Language::Mermaid);
        assert!(mermaid.starts_with("flowchart TB\n"), "{mermaid}");
        for id in ["arg_A1_1", "arg_B1_1", "arg_B1_2"] {
            assert_eq!(
                mermaid
                    .lines()
                    .filter(|l| l.trim_start().starts_with(&format!("{id}[\"")))
                    .count(),
                1,
                "{id} once as a node:\n{mermaid}"
            );
        }
        assert!(
            mermaid.contains("arg_B1_2 -->|supports| arg_B1_1"),
            "{mermaid}"
        );
        assert!(
            mermaid.contains("arg_A1_1 --x|rebuts| arg_B1_1"),
            "{mermaid}"
        );
        assert!(
            mermaid.contains("arg_B1_1 -.-x|undercuts| arg_A1_1"),
            "{mermaid}"
        );
        assert!(mermaid.contains("seat_B -->|sees| seat_A"), "{mermaid}");
        assert!(mermaid.contains("Who sees whom (chain)"), "{mermaid}");
        assert!(
            mermaid.contains("version_1 -->|then| version_2"),
            "{mermaid}"
        );
        assert!(
            mermaid.contains("#quot;one#quot; store #lt;simple#gt;"),
            "{mermaid}"
        );
        assert!(mermaid.contains("…"), "a long argument is cut: {mermaid}");
        // P14: a label spells no entity or directive of its own.
        assert_eq!(
            mermaid_label("#60;img src=x onerror=alert(1)#62; %%{init: {}}%%"),
            "#35;60;img src=x onerror=alert(1)#35;62; #37;#37;{init: {}}#37;#37;"
        );
        // Every subgraph is closed.
        let opened = mermaid.matches("subgraph ").count();
        let closed = mermaid.lines().filter(|l| l.trim() == "end").count();
        assert_eq!(opened, closed, "{mermaid}");
        let relations_drawn = mermaid
            .lines()
            .filter(|l| l.contains("|") && l.contains("arg_"))
            .count();
        assert_eq!(relations_drawn, relations.len());

        let dot = draw(&drawn, Language::Dot);
        assert!(dot.starts_with("// moot debate DEB-diagram1"), "{dot}");
        assert_eq!(dot.matches('{').count(), dot.matches('}').count(), "{dot}");
        assert!(
            dot.contains("arg_A1_1 -> arg_B1_1 [label=\"rebuts\", style=bold];"),
            "{dot}"
        );
        assert!(dot.contains("Keep \\\"one\\\" store"), "{dot}");
        assert_eq!(dot.matches(" -> ").count(), relations.len() + 2 + 1);
    }

    /// Without a topology announced, every seat sees every other (a mesh); without versions,
    /// there is no versions part.
    #[test]
    fn a_debate_without_a_topology_is_drawn_as_a_mesh() {
        let seats = [seat("A", "a"), seat("B", "b"), seat("C", "c")];
        let drawn = Drawn {
            id: "DEB-mesh",
            seats: &seats,
            arguments: &[],
            relations: &[],
            events: &[],
        };
        let mermaid = draw(&drawn, Language::Mermaid);
        assert!(mermaid.contains("Who sees whom (mesh)"));
        assert_eq!(mermaid.matches("|sees|").count(), 6);
        assert!(!mermaid.contains("Versions"));
    }
}
