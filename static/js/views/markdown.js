// A lesson's notes (issue 29) as safe Markdown: paragraphs, **bold**, *emphasis*, `code` and
// [links](https://…) only. Built as DOM nodes from text, never as HTML: raw HTML in a note
// shows as the text it is, and a link is kept only for http(s) and opens in a new tab.

const INLINE = /(\*\*[^*]+\*\*|\*[^*]+\*|`[^`]+`|\[[^\]]+\]\([^)\s]+\))/;

function inline(text) {
  const nodes = [];
  for (const part of text.split(INLINE)) {
    if (!part) continue;
    let node;
    if (part.startsWith("**") && part.endsWith("**") && part.length > 4) {
      node = document.createElement("strong");
      node.append(...inline(part.slice(2, -2)));
    } else if (part.startsWith("`") && part.endsWith("`") && part.length > 2) {
      node = document.createElement("code");
      node.textContent = part.slice(1, -1);
    } else if (part.startsWith("*") && part.endsWith("*") && part.length > 2) {
      node = document.createElement("em");
      node.append(...inline(part.slice(1, -1)));
    } else if (part.startsWith("[")) {
      const [, label, href] = part.match(/^\[([^\]]+)\]\(([^)\s]+)\)$/) ?? [];
      if (href && /^https?:\/\//i.test(href)) {
        node = document.createElement("a");
        node.href = href;
        node.target = "_blank";
        node.rel = "noopener noreferrer";
        node.append(...inline(label));
      } else {
        node = document.createTextNode(label ?? part); // any other scheme: its words only
      }
    } else {
      node = document.createTextNode(part);
    }
    nodes.push(node);
  }
  return nodes;
}

/** Markdown text as paragraphs of safe nodes. */
export function markdown(text) {
  return (text ?? "").split(/\n\s*\n/).filter((p) => p.trim()).map((p) => {
    const para = document.createElement("p");
    para.append(...inline(p.trim()));
    return para;
  });
}
