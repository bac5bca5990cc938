import { describe, expect, it } from "vitest";
import { formatWhen, renderMemoriesHtml } from "../../src/export/memories.js";

/** The Memories viewer: both languages, times in the event's time zone, the branding (issue 14). */
describe("Memories viewer", () => {
  const item = {
    id: "u1",
    uploader: "Ann <b>",
    caption: "First dance",
    hashtags: ["dance"],
    media_type: "image" as const,
    created_at: "2026-06-14T16:05:00.000Z",
    media: "media/u1.jpg",
    still: "thumbs/u1.jpg",
    comments: [],
  };
  const event = {
    name: "Anna & Ben",
    welcome_text_en: "Welcome!",
    welcome_text_de: "Willkommen!",
    accent_color: "#2f7de1",
    cover: "cover.jpg",
    time_zone: "Europe/Berlin",
  };

  it("formats times in the event's time zone, per language", () => {
    // 16:05 UTC is 18:05 in Berlin in summer, 17:05 in winter.
    expect(formatWhen(item.created_at, "en", "Europe/Berlin")).toMatch(/18:05/);
    expect(formatWhen(item.created_at, "de", "Europe/Berlin")).toMatch(/18:05/);
    expect(formatWhen("2026-01-10T16:05:00Z", "de", "Europe/Berlin")).toMatch(/17:05/);
    expect(formatWhen(item.created_at, "en", "America/New_York")).toMatch(/12:05/);
    expect(formatWhen(item.created_at, "de", "Europe/Berlin")).toMatch(/Juni|Jun/);
  });

  it("carries both languages, the branding and escapes what people typed", () => {
    const html = renderMemoriesHtml(event, [item]);
    expect(html).toContain('<img class="cover" src="cover.jpg"');
    expect(html).toContain("--accent:#2f7de1");
    expect(html).toContain('<span lang="en" class="l-en">Welcome!</span>');
    expect(html).toContain('<span lang="de" class="l-de">Willkommen!</span>');
    expect(html).toContain('<span lang="de" class="l-de">1 Erinnerung</span>');
    expect(html).toContain("Ann &lt;b&gt;");
    expect(html).toContain('datetime="2026-06-14T16:05:00.000Z"');
    expect(html).not.toContain(" UTC<");
  });

  it("a bad accent colour falls back; the default name is translated", () => {
    const html = renderMemoriesHtml({ ...event, name: "Our Event", accent_color: "red;}" }, []);
    expect(html).toContain("--accent:#ff7a59");
    expect(html).toContain('<span lang="de" class="l-de">Unser Event</span>');
    expect(renderMemoriesHtml("Plain", [])).toContain("<title>Plain</title>");
  });
});
