/*
 * xml.h - the one XML escaper and the one JUnit XML writer: every XML or
 * HTML document powercut writes (the HTML report and its SVG charts, the
 * report's --format junit, replay --junit) escapes text through
 * xml_escape(), and both JUnit documents are written by the junit_*
 * calls, so that the two say the same things the same way.
 *
 * Everything escaped is hostile input (board names, device identities,
 * reasons quoted from an agent, a damaged verdicts.jsonl): the output is
 * well-formed whatever the bytes.
 */
#ifndef PC_HARNESS_XML_H
#define PC_HARNESS_XML_H

#include <stddef.h>
#include <stdio.h>

/*
 * Write s as XML/HTML text, safe in element content and in quoted
 * attributes: & < > " ' as entities (' as &#39;, which HTML 4 reads too),
 * bytes that are not valid UTF-8 (overlong forms, surrogates, past
 * U+10FFFF, cut short) and characters XML 1.0 forbids or discourages
 * (controls but tab, newline and return, C1 controls, U+FFFE, U+FFFF) each
 * as U+FFFD. NULL writes nothing. xml_escape_max writes at most maxchars
 * characters, ending a longer s with an ellipsis (U+2026).
 */
void xml_escape(FILE *out, const char *s);
void xml_escape_max(FILE *out, const char *s, size_t maxchars);

/*
 * JUnit XML as GitLab and Jenkins read it, element by element, in order:
 *
 *   junit_begin                      <testsuites ...>
 *     junit_suite_begin              <testsuite ...>
 *       junit_property (any)         <properties><property .../>...
 *       junit_case_begin             <testcase ...>   (closes <properties>)
 *         junit_problem_begin        <failure|error ...>
 *           junit_text (any)         escaped text
 *         junit_problem_end          </failure|error>
 *         junit_system_out           <system-out>...</system-out>
 *       junit_case_end               </testcase>
 *     junit_suite_end                </testsuite>
 *   junit_end                        </testsuites>
 *
 * Every name, message and text is escaped here. The writer keeps no state
 * but whether a <properties> element is open (struct junit).
 */
struct junit {
	FILE *out;
	int props_open;
};

/* secs < 0: no time attribute */
void junit_begin(struct junit *j, FILE *out, const char *name, unsigned long tests, unsigned long failures,
		 unsigned long errors, double secs);
/* timestamp NULL, secs < 0: that attribute left out */
void junit_suite_begin(struct junit *j, const char *name, unsigned long tests, unsigned long failures,
		       unsigned long errors, double secs, const char *timestamp);
void junit_property(struct junit *j, const char *name, const char *value);
void junit_case_begin(struct junit *j, const char *classname, const char *name);
/* kind: "failure" (the device or the replay is at fault) or "error" (too
 * little to judge, or the run could not be done) */
void junit_problem_begin(struct junit *j, const char *kind, const char *type, const char *message);
void junit_text(struct junit *j, const char *text);
void junit_problem_end(struct junit *j, const char *kind);
void junit_system_out(struct junit *j, const char *text);
void junit_case_end(struct junit *j);
void junit_suite_end(struct junit *j);
/* 0, or -EIO when a write failed */
int junit_end(struct junit *j);

#endif
