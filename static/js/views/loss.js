// The Loss store: the latest loss line's value, and the curve over iterations (the server
// keeps the newest 1000 points). Non-finite losses break the line and are said in words.

import { display, exactTitle, toNumber } from "../format.js";
import { createChart } from "./chart.js";

export function createLoss(root, dtypeOf) {
  const value = document.createElement("p");
  value.className = "loss-value";
  const box = document.createElement("div");
  root.replaceChildren(value, box);
  const chart = createChart(box, { cls: "loss-chart" });

  return function render(session) {
    const dtype = dtypeOf(session);
    const text = session.loss === null ? "None" : display(session.loss, dtype);
    value.innerHTML = `<code>loss</code> = <span class="value" id="loss-value"></span>`;
    value.querySelector(".value").textContent = text;
    if (session.loss !== null) value.querySelector(".value").title = exactTitle(session.loss, dtype);
    value.classList.toggle("none", session.loss === null);

    const hist = session.history;
    const points = hist.map((p) => [p.iteration, p.loss]);
    const bad = points.filter(([, v]) => !Number.isFinite(toNumber(v))).length;
    chart({
      // the curve, and the newest point as a dot: where the loss is now
      series: [{ cls: "loss", points }, { cls: "now", points: points.slice(-1), dots: true }],
      include: [0],
      floor: 0,
      aria: hist.length
        ? `Loss over ${hist.length} iterations, from ${display(hist[0].loss, dtype)} to ${display(hist[hist.length - 1].loss, dtype)}` +
            (bad ? `; ${bad} not finite` : "")
        : "No loss yet: run the loss line",
    });
  };
}
