//! The protocols moot ships: the one place that lists them. Only the binary calls `builtin()`;
//! the session, the faces and the server are handed the `Registry` it returns.

use super::{Protocol, Registry};

/// Every protocol moot ships, in the order `moot protocols` lists them.
static SHIPPED: &[&dyn Protocol] = &[
    &super::moderated::Moderated,
    &super::panel::Panel,
    &super::dialogue::Dialogue,
    &super::arena::Arena,
    &super::code::Code,
];

/// The protocols moot ships, as a registry a session can be handed.
pub fn builtin() -> Registry {
    Registry::of(SHIPPED)
}
