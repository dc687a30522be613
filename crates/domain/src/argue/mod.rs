//! Derived views of a debate, pure functions of its turns: commitment stores, the bipolar
//! argument graph with gradual scores, and text-similarity measures used by the guardrails.

pub mod commitments;
pub mod dynamics;
pub mod graph;
pub mod map;
pub mod similarity;

pub use commitments::{Commitment, CommitmentStore, commitment_stores};
pub use dynamics::{Dynamics, HollowAgreement, Shift, dynamics, hollow_agreement};
pub use graph::{
    Argument, ArgumentGraph, Edge, IndirectKind, IndirectRelation, argument_graph, gradual_scores,
    indirect_relations,
};
pub use similarity::repetition_ratio;
