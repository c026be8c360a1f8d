import Table from 'cli-table3';

/**
 * Report tables (lab, benchmarks), built once as data and rendered either as Markdown — for files,
 * pipes and the README, which quotes it — or as an aligned box table for a terminal.
 */

export interface Column {
  readonly header: string;
  /** Numbers are right-aligned. @default 'left' */
  readonly align?: 'left' | 'right';
  /** Prose that may wrap onto several lines when the table is wider than the terminal. */
  readonly wrap?: boolean;
}

export interface TableData {
  readonly columns: readonly Column[];
  readonly rows: ReadonlyArray<readonly string[]>;
}

/** `markdown`: pipe table, one line per row; `terminal`: box-drawn, aligned, wrapped to the width. */
export type TableStyle = 'markdown' | 'terminal';

/** Markdown when asked, or when the output is not a terminal (a pipe, a file). */
export function tableStyleFor(output: { isTTY?: boolean }, markdown = false): TableStyle {
  return markdown || output.isTTY !== true ? 'markdown' : 'terminal';
}

/** Renders `table` as lines; `width` (terminal columns) bounds a terminal table when known. */
export function renderTable(table: TableData, style: TableStyle, width?: number): string[] {
  return style === 'markdown' ? renderMarkdown(table) : renderTerminal(table, width);
}

export function renderMarkdown({ columns, rows }: TableData): string[] {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [
    line(columns.map((c) => c.header)),
    `|${columns.map((c) => (c.align === 'right' ? '---:' : '---')).join('|')}|`,
    ...rows.map((row) => line(row.map((cell) => cell.replaceAll('|', '\\|')))),
  ];
}

const PADDING = 2; // one space either side of a cell
const MIN_WRAPPED = 12; // narrowest a wrapping column gets, unless its longest word is wider

export function renderTerminal(data: TableData, width?: number): string[] {
  const { columns, rows } = data;
  const colWidths = width && width > 0 ? fitWidths(data, width) : undefined;
  const table = new Table({
    head: columns.map((c) => c.header),
    colAligns: columns.map((c) => c.align ?? 'left'),
    // No colours: the same bytes on every terminal and in logs. Rule lines between rows only when
    // cells wrap, where they tell one row from the next.
    style: { head: [], border: [], compact: colWidths === undefined },
    ...(colWidths ? { colWidths, wordWrap: true, wrapOnWordBoundary: true } : {}),
  });
  for (const row of rows) table.push([...row]);
  return table.toString().split('\n');
}

/**
 * Column widths (padding included) that fit `width` when the natural table does not: first the
 * prose columns (`wrap`) give up space, then headers wrap onto several lines; cells of the other
 * columns never wrap. Undefined when the table fits as it is.
 */
function fitWidths({ columns, rows }: TableData, width: number): number[] | undefined {
  const cellsOf = (i: number) => rows.map((row) => row[i] ?? '');
  const longest = (texts: string[]) => Math.max(0, ...texts.map((t) => t.length));
  const longestWord = (texts: string[]) => longest(texts.flatMap((t) => t.split(/\s+/)));
  const natural = columns.map((c, i) => Math.max(c.header.length, longest(cellsOf(i))) + PADDING);
  const available = width - (columns.length + 1); // one border character per column, plus one
  if (natural.reduce((a, b) => a + b, 0) <= available) return undefined;

  const wrapping = columns.map((c) => c.wrap === true);
  const floor = columns.map((c, i) =>
    wrapping[i]
      ? Math.min(
          natural[i] as number,
          Math.max(MIN_WRAPPED, longestWord([c.header, ...cellsOf(i)])) + PADDING,
        )
      : Math.max(longestWord([c.header]), longest(cellsOf(i))) + PADDING,
  );
  // Fixed columns at their natural width if the prose still gets its floor; else headers wrap.
  const fixedNatural = natural.reduce((sum, w, i) => sum + (wrapping[i] ? 0 : w), 0);
  const proseFloor = floor.reduce((sum, w, i) => sum + (wrapping[i] ? w : 0), 0);
  const fixed = columns.map((_, i) =>
    fixedNatural + proseFloor <= available ? (natural[i] as number) : (floor[i] as number),
  );
  const fixedTotal = fixed.reduce((sum, w, i) => sum + (wrapping[i] ? 0 : w), 0);
  // The prose columns share what is left in proportion to their natural width.
  const proseNatural = natural.reduce((sum, w, i) => sum + (wrapping[i] ? w : 0), 0);
  const room = Math.max(available - fixedTotal, proseFloor);
  return columns.map((_, i) => {
    if (!wrapping[i]) return fixed[i] as number;
    const share = Math.floor((room * (natural[i] as number)) / proseNatural);
    return Math.min(natural[i] as number, Math.max(floor[i] as number, share));
  });
}
