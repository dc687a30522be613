//! The full-screen workbench: a fold of engine events into a view (`state`), the app that
//! reacts to keys (`app`), drawing (`views`), and the terminal loop (`run`).

pub mod state;
