//! The pre-pass that marks a program's source so that the interpreter can name lines it could
//! not name otherwise.
//!
//! QuickJS records a source position only at instructions that can throw (calls, property reads,
//! comparisons of objects). A loop of bare arithmetic (`while (true) { x++ }`) has none, so when
//! the interrupt handler stops it, the stack names the function's first line; and a thrown value
//! that is not an `Error` (`throw null`, `throw 42`) has no stack at all. The pre-pass parses the
//! program with `oxc_parser` (a real JavaScript parser: no pattern matching on source text) and
//! inserts three calls, never a line break, so every line keeps its number:
//!
//! | where | inserted | what it gives |
//! |---|---|---|
//! | before each loop (`while`, `do`, `for`, `for in`, `for of`, with its labels), wrapped in a block | `{__code_mode_loop();` ... `}` | a call on the loop's line, run once each time the loop is entered: the loop's instructions then map to the loop's line |
//! | around each `throw` statement's value | `__code_mode_throw(LINE,(` ... `))` | the value and the `throw`'s line, kept by the prelude until a `catch` clause runs |
//! | first in each `catch` block | `__code_mode_caught();` | forgets the kept value: a thrown value that was caught is no longer the program's last throw |
//!
//! The loop mark costs one call per entry into a loop, not per iteration.
//!
//! The parser recurses once per level of nesting and has no depth limit of its own, so a
//! hostile program of deep nesting could overflow its stack. The engine therefore calls [`mark`] only on a
//! program that QuickJS already parsed within [`PROBE_STACK_BYTES`] of stack (QuickJS checks its
//! own stack), on a thread that has [`PARSE_STACK_BYTES`] more for the parser: measured in a
//! debug build at the depth QuickJS accepts within 1 MiB (about four times the probe's), the
//! parser needed at most 32 MiB for any of 18 kinds of nesting (nested functions needed more
//! than 8). A program the probe refuses runs unmarked.

use oxc_allocator::Allocator;
use oxc_ast::ast::{CatchClause, DoWhileStatement, ForInStatement, ForOfStatement, ForStatement, LabeledStatement};
use oxc_ast::ast::{Statement, ThrowStatement, WhileStatement};
use oxc_ast_visit::{Visit, walk};
use oxc_span::{GetSpan, SourceType, Span};

/// The global function called before each loop.
pub(crate) const LOOP_MARK: &str = "__code_mode_loop";
/// The global function each `throw` statement's value passes through: `(line, value) => value`.
pub(crate) const THROW_MARK: &str = "__code_mode_throw";
/// The global function each `catch` block calls first.
pub(crate) const CATCH_MARK: &str = "__code_mode_caught";

/// The stack QuickJS may use to parse a program before [`mark`] parses it again (see the module
/// docs).
pub(crate) const PROBE_STACK_BYTES: usize = 256 * 1024;

/// The stack the parser of [`mark`] may use, beyond the interpreter's: 32 MiB, what it was
/// measured to need at most at four times the probe's depth.
pub(crate) const PARSE_STACK_BYTES: usize = 32 * 1024 * 1024;

/// `source` with the marks of the module docs inserted, or `None` when the parser does not
/// accept it (the interpreter then runs it as it is and reports its own syntax error).
pub(crate) fn mark(source: &str) -> Option<String> {
    let allocator = Allocator::default();
    let parsed = oxc_parser::Parser::new(&allocator, source, SourceType::cjs()).parse();
    if parsed.panicked || !parsed.diagnostics.is_empty() {
        return None;
    }
    let line_starts = std::iter::once(0).chain(source.match_indices('\n').map(|(at, _)| at + 1)).collect();
    let mut marker = Marker { line_starts, inserts: Vec::new(), label_start: None, seq: 0 };
    marker.visit_program(&parsed.program);
    let mut inserts = marker.inserts;
    inserts.sort_by_key(|insert| insert.key);
    let mut marked = String::with_capacity(source.len() + inserts.iter().map(|i| i.text.len()).sum::<usize>());
    let mut from = 0;
    for insert in inserts {
        let at = insert.key.0 as usize;
        marked.push_str(source.get(from..at)?);
        marked.push_str(&insert.text);
        from = at;
    }
    marked.push_str(source.get(from..)?);
    Some(marked)
}

/// Text to insert at a byte offset.
struct Insert {
    /// Offset, then closings before openings, then closings innermost first and openings
    /// outermost first (a node visited later is inside one visited earlier at the same offset).
    key: (u32, bool, i64),
    text: String,
}

/// Collects the inserts of one program.
struct Marker {
    /// The byte offset where each line starts (lines end at `\n`, as QuickJS counts them).
    line_starts: Vec<usize>,
    inserts: Vec<Insert>,
    /// The start of the outermost label of the loop about to be visited.
    label_start: Option<u32>,
    /// Visit order, for [`Insert::key`].
    seq: i64,
}

impl Marker {
    /// Inserts `open` at `span.start` and `close` at `span.end`.
    fn wrap(&mut self, span: Span, open: String, close: &str) {
        self.seq += 1;
        self.inserts.push(Insert { key: (span.start, true, self.seq), text: open });
        self.inserts.push(Insert { key: (span.end, false, -self.seq), text: close.to_owned() });
    }

    /// The 1-based line of byte `offset`.
    fn line(&self, offset: u32) -> usize {
        self.line_starts.partition_point(|&start| start <= offset as usize)
    }

    /// Wraps the loop at `span` (with its labels, if any) in a block that first calls
    /// [`LOOP_MARK`].
    fn mark_loop(&mut self, span: Span) {
        let start = self.label_start.take().unwrap_or(span.start);
        self.wrap(Span::new(start, span.end), format!("{{{LOOP_MARK}();"), "}");
    }
}

/// Whether `statement`, under any labels, is a loop.
fn is_loop(statement: &Statement<'_>) -> bool {
    match statement {
        Statement::WhileStatement(_)
        | Statement::DoWhileStatement(_)
        | Statement::ForStatement(_)
        | Statement::ForInStatement(_)
        | Statement::ForOfStatement(_) => true,
        Statement::LabeledStatement(labeled) => is_loop(&labeled.body),
        _ => false,
    }
}

impl<'a> Visit<'a> for Marker {
    fn visit_labeled_statement(&mut self, it: &LabeledStatement<'a>) {
        // `continue outer` needs `outer:` right before its loop: the block goes around the labels.
        if self.label_start.is_none() && is_loop(&it.body) {
            self.label_start = Some(it.span.start);
        }
        walk::walk_labeled_statement(self, it);
    }

    fn visit_while_statement(&mut self, it: &WhileStatement<'a>) {
        self.mark_loop(it.span);
        walk::walk_while_statement(self, it);
    }

    fn visit_do_while_statement(&mut self, it: &DoWhileStatement<'a>) {
        self.mark_loop(it.span);
        walk::walk_do_while_statement(self, it);
    }

    fn visit_for_statement(&mut self, it: &ForStatement<'a>) {
        self.mark_loop(it.span);
        walk::walk_for_statement(self, it);
    }

    fn visit_for_in_statement(&mut self, it: &ForInStatement<'a>) {
        self.mark_loop(it.span);
        walk::walk_for_in_statement(self, it);
    }

    fn visit_for_of_statement(&mut self, it: &ForOfStatement<'a>) {
        self.mark_loop(it.span);
        walk::walk_for_of_statement(self, it);
    }

    fn visit_throw_statement(&mut self, it: &ThrowStatement<'a>) {
        let line = self.line(it.span.start);
        self.wrap(it.argument.span(), format!("{THROW_MARK}({line},("), "))");
        walk::walk_throw_statement(self, it);
    }

    fn visit_catch_clause(&mut self, it: &CatchClause<'a>) {
        let inside = it.body.span.start + 1;
        self.wrap(Span::new(inside, inside), format!("{CATCH_MARK}();"), "");
        walk::walk_catch_clause(self, it);
    }
}

#[cfg(test)]
mod tests {
    use super::mark;

    #[test]
    fn a_loop_is_wrapped_in_a_block_that_marks_it_first() {
        assert_eq!(mark("while (x) x--;").unwrap(), "{__code_mode_loop();while (x) x--;}");
    }

    #[test]
    fn labels_stay_right_before_their_loop() {
        assert_eq!(mark("a: b: for (;;) continue a;").unwrap(), "{__code_mode_loop();a: b: for (;;) continue a;}");
        assert_eq!(mark("a: { break a; }").unwrap(), "a: { break a; }");
    }

    #[test]
    fn nested_loops_that_end_together_close_innermost_first() {
        assert_eq!(
            mark("for (;;) while (x) do x--; while (x)").unwrap(),
            "{__code_mode_loop();for (;;) {__code_mode_loop();while (x) {__code_mode_loop();do x--; while (x)}}}"
        );
    }

    #[test]
    fn a_thrown_value_passes_through_the_mark_with_its_line() {
        assert_eq!(mark("\n\nthrow a, b;").unwrap(), "\n\nthrow __code_mode_throw(3,(a, b));");
        assert_eq!(mark("if (x) throw null").unwrap(), "if (x) throw __code_mode_throw(1,(null))");
    }

    #[test]
    fn a_catch_block_forgets_the_thrown_value_first() {
        assert_eq!(mark("try { f() } catch { g() }").unwrap(), "try { f() } catch {__code_mode_caught(); g() }");
    }

    #[test]
    fn no_line_break_is_inserted() {
        let source = "let i = 0;\nwhile (true)\n{\n  i++;\n}\ntry { throw 1 } catch (e) {}\n";
        let marked = mark(source).unwrap();
        assert_eq!(marked.matches('\n').count(), source.matches('\n').count());
    }

    #[test]
    fn a_syntax_error_gives_no_marks() {
        assert_eq!(mark("while (true"), None);
        assert_eq!(mark("const = 2;"), None);
    }
}
