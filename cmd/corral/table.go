package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// table prints rows in aligned columns, as the nats command's tables.
type table struct {
	w    *tabwriter.Writer
	out  io.Writer
	note string
}

func newTable(out io.Writer, header ...string) *table {
	t := &table{w: tabwriter.NewWriter(out, 0, 0, 2, ' ', 0), out: out}
	fmt.Fprintln(t.w, strings.Join(header, "\t"))
	return t
}

func (t *table) row(cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = fmt.Sprint(c)
	}
	fmt.Fprintln(t.w, strings.Join(s, "\t"))
}

func (t *table) footer(s string) { t.note = s }

func (t *table) flush() error {
	if err := t.w.Flush(); err != nil {
		return err
	}
	if t.note != "" {
		_, err := fmt.Fprintln(t.out, "\n"+t.note)
		return err
	}
	return nil
}
