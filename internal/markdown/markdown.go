// Package markdown reads the fenced code blocks of the repository's
// Markdown files, for the tests that run or parse what the documentation
// shows.
package markdown

import "strings"

// CodeBlock is one fenced block of a Markdown file.
type CodeBlock struct {
	// Info is the fence's info string: the language, then any words that
	// say more about the block ("yaml file_sd").
	Info string
	// Text is the block's content, each line ending in a newline.
	Text string
	// Line is the line of the opening fence, counting from 1.
	Line int
}

// Lang is the first word of the info string, the block's language.
func (b CodeBlock) Lang() string {
	lang, _, _ := strings.Cut(b.Info, " ")
	return lang
}

// Kind is the info string's second word, what the block is beyond its
// language ("file_sd" for "yaml file_sd"), or "".
func (b CodeBlock) Kind() string {
	_, rest, _ := strings.Cut(b.Info, " ")
	kind, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
	return kind
}

// CodeBlocks lists the blocks fenced with ``` at the start of a line, in
// order. The repository's Markdown uses no other fences; a block left open
// at the end of the file is not listed.
func CodeBlocks(data string) []CodeBlock {
	var blocks []CodeBlock
	var cur *CodeBlock
	for i, line := range strings.Split(data, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &CodeBlock{Info: strings.TrimSpace(strings.TrimPrefix(line, "```")), Line: i + 1}
		case cur != nil && strings.TrimRight(line, " ") == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.Text += line + "\n"
		}
	}
	return blocks
}
