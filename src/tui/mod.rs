//! The full-screen workbench: a fold of engine events into a view (`state`), the app that
//! reacts to keys (`app`, `keymap`), drawing (`views`, `theme`, `wrap`), and the terminal loop
//! (`run`). It speaks to the engine only through `Event` and `Control`.

pub mod app;
mod browse;
pub mod history;
pub mod keymap;
pub mod markdown;
mod outside;
pub mod run;
pub mod state;
pub mod theme;
pub mod views;
pub mod wrap;
