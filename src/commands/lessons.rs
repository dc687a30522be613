//! `moot lessons`: list, show, forget and export what debates learned.

use super::{Failure, one_line, print, print_json};
use crate::sanitize;
use crate::store::Store;

/// A lesson's id as typed: `L3` or `3`.
fn lesson_id(text: &str) -> Result<i64, Failure> {
    text.trim()
        .trim_start_matches(['L', 'l'])
        .parse()
        .map_err(|_| {
            Failure::usage(format!(
                "{text:?} is not a lesson id; `moot lessons list` shows them (L1, L2…)"
            ))
        })
}

/// `moot lessons list | show | rm | off | on`.
pub fn lessons(store: &Store, action: crate::cli::LessonsAction) -> Result<(), Failure> {
    use crate::cli::LessonsAction;
    let json_out = |value: serde_json::Value| print_json(&value);
    match action {
        LessonsAction::List { json } => {
            let lessons = store.lessons()?;
            if json {
                return json_out(serde_json::to_value(&lessons).unwrap_or_default());
            }
            let off = if crate::lessons::turned_off(store)? {
                " (lessons are off: `moot lessons on` turns them back on)"
            } else {
                ""
            };
            if lessons.is_empty() {
                return print(&format!(
                    "No lessons yet{off}; each finished debate writes some.\n"
                ));
            }
            let mut out = format!("{} lessons{off}\n", lessons.len());
            for lesson in &lessons {
                out.push_str(&format!(
                    "L{:<4} {:<5} {:>3.0}%  {}  {}\n",
                    lesson.id,
                    lesson.went,
                    lesson.confidence * 100.0,
                    lesson.source,
                    one_line(&lesson.text, 90)
                ));
            }
            print(&out)
        }
        LessonsAction::Show { id, json } => {
            let number = lesson_id(&id)?;
            let lesson = store.lesson(number)?.ok_or_else(|| {
                Failure::usage(format!(
                    "there is no lesson L{number}; `moot lessons list` shows them"
                ))
            })?;
            if json {
                return json_out(serde_json::to_value(&lesson).unwrap_or_default());
            }
            print(&sanitize::clean(&format!(
                "L{} · went {} · confidence {:.0}%\nfrom {} ({}), {}\n\n{}\n\nNext time: {}\n",
                lesson.id,
                lesson.went,
                lesson.confidence * 100.0,
                lesson.source,
                lesson.question,
                lesson.created_at,
                lesson.text,
                lesson.advice
            )))
        }
        LessonsAction::Rm { id } => {
            let number = lesson_id(&id)?;
            if !store.remove_lesson(number)? {
                return Err(Failure::usage(format!(
                    "there is no lesson L{number}; `moot lessons list` shows them"
                )));
            }
            print(&format!("removed L{number}\n"))
        }
        LessonsAction::Off => {
            store.set_preference(crate::lessons::PREFERENCE, "off")?;
            print(
                "Lessons are off: debates are given none and write none (`moot lessons on` undoes it).\n",
            )
        }
        LessonsAction::On => {
            store.set_preference(crate::lessons::PREFERENCE, "on")?;
            print("Lessons are on.\n")
        }
    }
}
