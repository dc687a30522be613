//! Layered layout of the argument graph for the ASCII map: answered arguments above the ones
//! that answer them, each layer ordered by the barycentre of its neighbours to keep edges
//! from crossing. Pure: the same graph always gives the same layout.

use super::graph::ArgumentGraph;
use crate::debate::Named as _;
use std::collections::HashMap;

/// Where each argument sits: its layer (0 = top) and its position within the layer.
#[derive(Debug, Clone, PartialEq)]
pub struct MapLayout {
    /// Per layer, argument indices (into `graph.arguments`) from left to right.
    pub layers: Vec<Vec<usize>>,
    /// Per argument: (layer, position).
    pub places: Vec<(usize, usize)>,
}

/// Lays the graph out. An argument's layer is one below the deepest argument it answers, so
/// every edge points upward.
pub fn layout(graph: &ArgumentGraph) -> MapLayout {
    let count = graph.arguments.len();
    let edges: Vec<(usize, usize)> = graph
        .edge_positions()
        .into_iter()
        .filter(|(from, to)| from != to)
        .collect();
    // Arguments arrive in journal order and can only answer earlier ones, so one pass in
    // that order settles the layers (cycles, if a model made one, are cut by the order).
    let mut layer = vec![0usize; count];
    for i in 0..count {
        let deepest = edges
            .iter()
            .filter(|(from, to)| *from == i && *to < i)
            .map(|(_, to)| layer[*to] + 1)
            .max();
        layer[i] = deepest.unwrap_or(0);
    }
    let depth = layer.iter().copied().max().map_or(0, |d| d + 1);
    let mut layers: Vec<Vec<usize>> = vec![Vec::new(); depth];
    for (i, l) in layer.iter().enumerate() {
        layers[*l].push(i);
    }
    // Barycentre sweeps, down then up, a few times.
    for _ in 0..4 {
        for l in 1..depth {
            order_by_neighbours(&mut layers, l, l - 1, &edges, true);
        }
        for l in (0..depth.saturating_sub(1)).rev() {
            order_by_neighbours(&mut layers, l, l + 1, &edges, false);
        }
    }
    let mut places = vec![(0, 0); count];
    for (l, row) in layers.iter().enumerate() {
        for (position, &i) in row.iter().enumerate() {
            places[i] = (l, position);
        }
    }
    MapLayout { layers, places }
}

fn order_by_neighbours(
    layers: &mut [Vec<usize>],
    layer: usize,
    fixed: usize,
    edges: &[(usize, usize)],
    upward: bool,
) {
    let position: HashMap<usize, usize> = layers[fixed]
        .iter()
        .enumerate()
        .map(|(p, &i)| (i, p))
        .collect();
    let mut keyed: Vec<(f64, usize, usize)> = layers[layer]
        .iter()
        .enumerate()
        .map(|(current, &i)| {
            let neighbours: Vec<usize> = edges
                .iter()
                .filter_map(|&(from, to)| {
                    let other = if upward && from == i {
                        to
                    } else if !upward && to == i {
                        from
                    } else {
                        return None;
                    };
                    position.get(&other).copied()
                })
                .collect();
            let key = if neighbours.is_empty() {
                current as f64
            } else {
                neighbours.iter().sum::<usize>() as f64 / neighbours.len() as f64
            };
            (key, current, i)
        })
        .collect();
    // Ties keep their current order, so the layout is stable.
    keyed.sort_by(|a, b| {
        a.0.partial_cmp(&b.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.1.cmp(&b.1))
    });
    layers[layer] = keyed.into_iter().map(|(_, _, i)| i).collect();
}

/// How many pairs of edges between adjacent layers cross in a layout.
pub fn crossings(graph: &ArgumentGraph, layout: &MapLayout) -> usize {
    let index = graph.index();
    let spans: Vec<((usize, usize), (usize, usize))> = graph
        .relations
        .iter()
        .filter_map(|e| {
            let from = layout.places[*index.get(e.from.as_str())?];
            let to = layout.places[*index.get(e.to.as_str())?];
            (from.0 == to.0 + 1).then_some((from, to))
        })
        .collect();
    let mut count = 0;
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            if a.0.0 == b.0.0
                && (a.0.1 as isize - b.0.1 as isize).signum()
                    * (a.1.1 as isize - b.1.1 as isize).signum()
                    < 0
            {
                count += 1;
            }
        }
    }
    count
}

/// The graph as an indented ASCII outline for documents: every argument under the one it
/// answers, with the relation on the branch and its score; an argument that answers several
/// sits under the first and names the others.
///
/// ```text
/// [P1 0.42] We should adopt tower
/// |-- support -- [P2 0.60] We should adopt tower
/// |   `-- undercut -- [O3 0.50] The retries are not idempotent
/// `-- rebut -- [O1 0.50] We should keep the loop
/// ```
pub fn outline(graph: &ArgumentGraph, text_chars: usize) -> String {
    let index = graph.index();
    // The first relation out of each argument places it; the rest are named beside it.
    let mut parent: Vec<Option<(usize, crate::debate::Relation)>> =
        vec![None; graph.arguments.len()];
    let mut also: Vec<Vec<String>> = vec![Vec::new(); graph.arguments.len()];
    for edge in &graph.relations {
        let (Some(&from), Some(&to)) = (index.get(edge.from.as_str()), index.get(edge.to.as_str()))
        else {
            continue;
        };
        if from == to || to > from {
            continue;
        }
        match parent[from] {
            None => parent[from] = Some((to, edge.kind)),
            Some(_) => also[from].push(format!("{} {}", edge.kind.as_str(), edge.to)),
        }
    }
    let children = |of: usize| -> Vec<usize> {
        (0..graph.arguments.len())
            .filter(|&i| parent[i].is_some_and(|(p, _)| p == of))
            .collect()
    };
    let label = |i: usize| {
        let argument = &graph.arguments[i];
        let mut text: String = argument.text.chars().take(text_chars).collect();
        if argument.text.chars().count() > text_chars {
            text.push_str("...");
        }
        let mut line = format!("[{} {:.2}] {}", argument.id, argument.score, text);
        if let Some(how) = argument.withdrawal() {
            line.push_str(&format!(" ({how})"));
        }
        if !also[i].is_empty() {
            line.push_str(&format!(" (also {})", also[i].join(", ")));
        }
        line
    };
    let mut out = String::new();
    fn walk(
        node: usize,
        prefix: &str,
        out: &mut String,
        children: &dyn Fn(usize) -> Vec<usize>,
        label: &dyn Fn(usize) -> String,
        parent: &[Option<(usize, crate::debate::Relation)>],
    ) {
        let kids = children(node);
        for (n, &kid) in kids.iter().enumerate() {
            let last = n + 1 == kids.len();
            let relation = parent[kid].map(|(_, r)| r.as_str()).unwrap_or("");
            out.push_str(&format!(
                "{prefix}{} {relation} -- {}\n",
                if last { "`--" } else { "|--" },
                label(kid)
            ));
            let deeper = format!("{prefix}{}", if last { "    " } else { "|   " });
            walk(kid, &deeper, out, children, label, parent);
        }
    }
    for root in (0..graph.arguments.len()).filter(|&i| parent[i].is_none()) {
        out.push_str(&label(root));
        out.push('\n');
        walk(root, "", &mut out, &children, &label, &parent);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argue::graph::{Argument, Edge};
    use crate::debate::Relation;

    fn graph(ids: &[&str], edges: &[(&str, &str)]) -> ArgumentGraph {
        ArgumentGraph {
            arguments: ids
                .iter()
                .map(|id| Argument {
                    id: id.to_string(),
                    seat: id[..1].to_string(),
                    round: 1,
                    text: String::new(),
                    score: 0.5,
                    retracted: false,
                    struck: false,
                    conceded_by: vec![],
                    challenged_by: vec![],
                })
                .collect(),
            relations: edges
                .iter()
                .map(|(from, to)| Edge {
                    from: from.to_string(),
                    to: to.to_string(),
                    kind: Relation::Rebut,
                })
                .collect(),
        }
    }

    #[test]
    fn answers_sit_below_what_they_answer() {
        let g = graph(&["A1", "B1", "A2", "B2"], &[("A2", "B1"), ("B2", "A2")]);
        let layout = layout(&g);
        assert_eq!(layout.places[0].0, 0);
        assert_eq!(layout.places[1].0, 0);
        assert_eq!(layout.places[2].0, 1, "A2 answers B1");
        assert_eq!(layout.places[3].0, 2, "B2 answers A2");
    }

    #[test]
    fn barycentre_ordering_removes_avoidable_crossings() {
        // In journal order, the answers would cross: C answers Y (right), D answers X (left).
        let g = graph(&["X", "Y", "C", "D"], &[("C", "Y"), ("D", "X")]);
        let layout = layout(&g);
        assert_eq!(crossings(&g, &layout), 0);
        assert_eq!(layout.layers[1], vec![3, 2], "D goes under X, C under Y");
    }
}
