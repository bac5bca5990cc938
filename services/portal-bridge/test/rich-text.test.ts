import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { richText } from "../src/mcp/format.js";
import { type Harness, mcpClient, startHarness, textOf } from "./helpers.js";

describe("rich text rendering", () => {
  it("renders rich text objects, HTML strings and plain text; keeps links as URLs; caps with …", () => {
    expect(
      richText({ content: '<p>Read <a href="https://x.org/a">this</a> &amp; answer.</p>', type: "richText" }),
    ).toBe("Read this <https://x.org/a> & answer.");
    expect(richText("<ul><li>one</li><li>two</li></ul>")).toBe("- one\n- two");
    expect(richText("plain & simple")).toBe("plain & simple");
    expect(richText('<a href="https://x.org">https://x.org</a>')).toBe("https://x.org");
    expect(richText({ type: "richText" })).toBe("");
    expect(richText(42)).toBe("");
    expect(richText(null)).toBe("");
    const long = richText(`<p>${"word ".repeat(100)}</p>`, 40);
    expect(long.length).toBeLessThanOrEqual(40);
    expect(long.endsWith("…")).toBe(true);
    expect(richText("<script>alert(1)</script><p>ok</p><img src=x>")).toBe("ok");
  });
});

describe("portal tools render rich text fields as text", () => {
  let h: Harness;
  let url: string;
  beforeAll(async () => {
    h = await startHarness();
    url = `${await h.listen()}/mcp`;
  });
  afterAll(async () => h.close());

  it("list_tasks and upcoming_deadlines show task descriptions as text; structured keeps the original", async () => {
    const { client, close } = await mcpClient(url);
    const tasks = await client.callTool({ name: "list_tasks", arguments: { limit: 5 } });
    const text = textOf(tasks);
    expect(text).not.toContain("[object Object]");
    expect(text).not.toContain("<p>");
    expect(text).toContain(
      "Task 0 (Biology), due Sun 2026-11-22 09:00: Read chapter 0 <https://books.example.org/ch0> and answer all questions. - Use a pen - Max 2 pages",
    );
    expect(text).toContain("Task 1 (Maths), due Mon 2026-11-23 09:00: Plain notes for task 1");
    const items = (tasks.structuredContent as { items: { description?: unknown }[] }).items;
    expect(items[0]?.description).toEqual({
      content: expect.stringContaining("<strong>all</strong>"),
      type: "richText",
    });

    const due = await client.callTool({ name: "upcoming_deadlines", arguments: { days: 3 } });
    expect(textOf(due)).not.toContain("[object Object]");
    expect(textOf(due)).toContain("Task 3 (Read chapter 3 <https://books.example.org/ch3> and answer all");
    await close();
  });

  it("list_news shows the body as text and keeps the HTML in structured content", async () => {
    const { client, close } = await mcpClient(url);
    const news = await client.callTool({ name: "list_news", arguments: {} });
    expect(textOf(news)).toContain("Sports day is on Friday.");
    expect(textOf(news)).toContain("<https://school.example.org/sports>");
    const item = (news.structuredContent as { items: { content: string; text: string }[] }).items[0];
    expect(item?.content).toContain("<b>Friday</b>");
    expect(item?.text).toContain("- Bring water");
    await close();
  });
});
