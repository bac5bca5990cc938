import { render } from "preact";
import { Root } from "./root.js";
import "./styles.css";

render(<Root />, document.getElementById("root")!);
