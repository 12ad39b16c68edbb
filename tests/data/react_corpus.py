"""A labelled corpus of realistic React completions: (name, completion, verdict per level, error line).

``verdicts`` maps level -> compiles?; ``error_line`` is the 1-based line *of the completion*
where the mistake is (the lowest token scores must fall there), or None for passing code.
"""

FENCE = "```"

COUNTER = """Here is the component you asked for:

```tsx
import { useState } from "react";

export default function Counter() {
  const [count, setCount] = useState(0);
  return (
    <div className="counter">
      <p>Clicked {count} times</p>
      <button onClick={() => setCount(count + 1)}>Add one</button>
    </div>
  );
}
```

It keeps the count in state."""

TODO_LIST = """```jsx
import React, { useState } from "react";

export function TodoList({ items }) {
  const [done, setDone] = useState([]);
  return (
    <ul>
      {items.map((item) => (
        <li key={item} onClick={() => setDone([...done, item])}>
          {item}
        </li>
      ))}
    </ul>
  );
}
```"""

GLUED_ATTRIBUTE = """```tsx
export default function Card() {
  return (
    <div className="card">
      <p className="title"Back</p>
    </div>
  );
}
```"""

UNCLOSED_TAG = """```tsx
export default function Panel() {
  return (
    <section>
      <h2>Settings
    </section>
  );
}
```"""

UNTERMINATED_STRING = """```tsx
export default function Banner() {
  const title = "Welcome;
  return <h1>{title}</h1>;
}
```"""

DISALLOWED_IMPORT = """```tsx
import moment from "moment";

export default function Today() {
  return <time>{moment().format("YYYY-MM-DD")}</time>;
}
```"""

RELATIVE_IMPORT = """```tsx
import Header from "./Header";

export default function Page() {
  return <Header />;
}
```"""

UNDECLARED_NAME = """```tsx
export default function Total() {
  const price = 4;
  return <span>{price * quantity}</span>;
}
```"""

WRONG_PROP_TYPE = """```tsx
type Props = { count: number };

function Badge({ count }: Props) {
  return <span className="badge">{count}</span>;
}

export default function App() {
  return <Badge count="three" />;
}
```"""

CASES = [
    ("counter", COUNTER, {"syntax": True, "build": True, "typecheck": True}, None),
    ("todo_list_jsx", TODO_LIST, {"syntax": True, "build": True}, None),
    ("glued_attribute", GLUED_ATTRIBUTE, {"syntax": False, "build": False, "typecheck": False}, 5),
    ("unclosed_tag", UNCLOSED_TAG, {"syntax": False, "build": False, "typecheck": False}, None),
    ("unterminated_string", UNTERMINATED_STRING, {"syntax": False, "build": False, "typecheck": False}, 3),
    ("disallowed_import", DISALLOWED_IMPORT, {"syntax": True, "build": False, "typecheck": False}, 2),
    ("relative_import", RELATIVE_IMPORT, {"syntax": True, "build": False, "typecheck": False}, 2),
    ("undeclared_name", UNDECLARED_NAME, {"syntax": True, "build": True, "typecheck": False}, 4),
    ("wrong_prop_type", WRONG_PROP_TYPE, {"syntax": True, "build": True, "typecheck": False}, 9),
]
