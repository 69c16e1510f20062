"""The page in a real browser (headless Chromium): add, edit in place, forget with its confirmation, accept a
proposal, what each agent sees, a change made elsewhere shown without a reload, and fact text that stays text."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from pipeline import PersonaStore, load_settings

from .profile import NPM, PNPM

SECRET = "Keeps a diary in a blue notebook."


def test_add_a_fact_and_see_it_under_its_topic(page: Page):
    page.get_by_text("Add a fact").click()
    form = page.locator("form#add")
    form.get_by_label("Fact").fill("Reads logs before guessing.")
    form.get_by_label("Topic").fill("debugging")
    form.get_by_role("button", name="Add").click()
    expect(page.get_by_role("status")).to_contain_text("added #")
    section = page.locator("section.topic", has=page.get_by_role("heading", name="debugging"))
    expect(section.locator("td.content .text")).to_have_text("Reads logs before guessing.")
    expect(page).to_have_url(re.compile(r"/\?note=\d+$"))  # the key left the address at the first visit


def test_edit_in_place_replaces_with_lineage_and_undo_brings_it_back(page: Page):
    row = page.locator("tr", has_text="Uses uv, never pip.")
    row.get_by_text("Edit").click()
    row.locator("textarea").fill("Uses uv for everything Python.")
    row.get_by_role("button", name="Replace").click()
    expect(page.get_by_role("status")).to_contain_text("supersedes")
    expect(page.locator("td.content .text", has_text="Uses uv for everything Python.")).to_be_visible()
    expect(page.locator("td.content .text", has_text="Uses uv, never pip.")).to_have_count(0)
    page.locator("tr", has_text="Uses uv for everything Python.").get_by_role("link", name="History").click()
    expect(page.locator("tbody")).to_contain_text("Uses uv, never pip.")
    expect(page.locator("tbody")).to_contain_text("superseded by")
    page.get_by_role("button", name="Undo the last replace").click()
    expect(page.get_by_role("status")).to_contain_text("restored")
    page.get_by_role("link", name="Facts").click()
    expect(page.locator("td.content .text", has_text="Uses uv, never pip.")).to_be_visible()


def test_forget_asks_first_and_then_the_text_is_gone_even_going_back(page: Page, overrides):
    with PersonaStore.from_settings(load_settings(overrides=overrides)) as store:
        store.add(SECRET, topic="private")
    page.reload()
    page.locator("tr", has_text=SECRET).get_by_role("link", name="Forget…").click()
    expect(page.locator("main")).to_contain_text("This cannot be undone.")
    page.get_by_role("button", name="Forget it for good").click()
    expect(page.get_by_role("status")).to_contain_text("forgot #")
    assert SECRET not in page.content()
    page.go_back()  # the confirmation page: nothing is kept by the browser, so it is asked for again, and is gone
    assert SECRET not in page.content()
    page.go_back()
    assert SECRET not in page.content()


def test_accept_a_proposal(page: Page):
    page.get_by_role("link", name="Proposals").click()
    row = page.locator("tr", has_text=PNPM)
    expect(row).to_contain_text(NPM)
    row.get_by_role("button", name="Accept").click()
    expect(page.get_by_role("status")).to_contain_text("supersedes")
    expect(page.locator("main")).to_contain_text("No open proposals.")
    page.get_by_role("link", name="Facts").click()
    expect(page.locator("td.content .text", has_text=PNPM)).to_be_visible()
    expect(page.locator("td.content .text", has_text=NPM)).to_have_count(0)


def test_each_agent_shows_its_text_its_budget_and_what_was_left_out(page: Page):
    page.get_by_role("link", name="What each agent sees").click()
    codex = page.locator("#target-codex")
    expect(codex.get_by_role("heading")).to_contain_text("Codex")
    expect(codex.locator(".bar .label").first).to_contain_text(re.compile(r"\d+ / 45 tokens"))
    expect(codex.locator("pre.text")).to_contain_text("Answers tersely")
    expect(codex.locator("details.left-out")).to_contain_text("fitted out (budget)")
    markdown = page.locator("#target-markdown")
    expect(markdown.get_by_role("heading")).to_contain_text("Hermes Agent (injected)")
    expect(markdown.locator("pre.text")).not_to_contain_text("small pull requests")  # Codex's own fact
    expect(markdown.locator("details.left-out")).to_contain_text("out of scope")


def test_a_change_made_elsewhere_shows_without_a_reload(page: Page, overrides):
    expect(page.locator("h1")).to_have_text("Facts")
    with PersonaStore.from_settings(load_settings(overrides=overrides), writer="cli") as store:
        store.add("Asks before deleting files.", topic="safety")  # as `persona add` or an agent's tool call
    expect(page.locator("td.content .text", has_text="Asks before deleting files.")).to_be_visible()


def test_a_fact_holding_markup_is_shown_as_text_and_runs_nothing(page: Page):
    hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script> Likes tea.'
    page.get_by_text("Add a fact").click()
    form = page.locator("form#add")
    form.get_by_label("Fact").fill(hostile)
    form.get_by_label("Topic").fill("<b>drinks</b>")
    form.get_by_role("button", name="Add").click()
    expect(page.locator("td.content .text", has_text="Likes tea.")).to_have_text(hostile)
    expect(page.get_by_role("heading", name="<b>drinks</b>")).to_be_visible()
    page.get_by_role("link", name="What each agent sees").click()
    expect(page.locator("#target-markdown pre.text")).to_contain_text("Likes tea.")
    assert page.evaluate("window.pwned") is None
    assert page.locator("main img, main b").count() == 0


def test_a_fact_added_for_one_project_shows_that_projects_scope(page: Page, tmp_path):
    page.get_by_text("Add a fact").click()
    form = page.locator("form#add")
    form.get_by_label("Fact", exact=True).fill("Ships on Thursdays.")
    form.get_by_label("Topic", exact=True).fill("release")
    form.get_by_label("For").select_option(label=str(tmp_path))  # the targets' project, one of the user's
    form.get_by_role("button", name="Add").click()
    expect(page.get_by_role("status")).to_contain_text("added #")
    row = page.locator("tr", has_text="Ships on Thursdays.")
    expect(row.locator("td").nth(2)).to_have_text(f"project {tmp_path}")


def test_a_long_writer_leaves_the_fact_column_its_width_and_shows_whole_on_hover(page: Page, overrides):
    writer = "adopt:" + "/a-very-long-folder-name" * 12 + "/CLAUDE.md"
    with PersonaStore.from_settings(load_settings(overrides=overrides), writer=writer) as store:
        store.add("Names every branch after its ticket, then a short summary.", topic="review")
    page.reload()
    row = page.locator("tr", has_text="Names every branch after its ticket")
    cell = row.locator("td.writer")
    expect(cell).to_have_text("adopt:CLAUDE.md")
    expect(cell).to_have_attribute("title", re.compile("^" + re.escape(writer) + ", created "))
    fact = row.locator("td.content").bounding_box()
    assert fact is not None and fact["width"] >= 256, fact  # 16rem at least, never squeezed to a sliver
    text = row.locator("td.content .text").bounding_box()
    assert text is not None and text["height"] < 3 * 24, text  # the sentence wraps on words, in a line or two


def test_the_page_has_an_icon_and_no_request_fails(page: Page):
    failed: list[str] = []
    page.on("response", lambda response: failed.append(response.url) if response.status >= 400 else None)
    page.reload()
    page.wait_for_load_state("networkidle")
    assert failed == []
    assert page.locator('link[rel="icon"]').count() == 1


def test_demote_asks_first_and_says_what_it_does(page: Page):
    page.locator("tr", has_text="Uses uv, never pip.").get_by_role("link", name="Demote…").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Demote #")
    expect(page.locator("main")).to_contain_text("a tombstone keeps it from being proposed or imported again")
    page.get_by_role("button", name="Demote it").click()
    expect(page.get_by_role("status")).to_contain_text("demoted #")
    expect(page.locator("td.content .text", has_text="Uses uv, never pip.")).to_have_count(0)


def test_the_header_counts_the_open_proposals(page: Page):
    expect(page.get_by_role("link", name="Proposals")).to_have_text("Proposals (1)")
    page.get_by_role("link", name="Proposals").click()
    page.locator("tr", has_text=PNPM).get_by_role("button", name="Accept").click()
    expect(page.get_by_role("link", name="Proposals")).to_have_text("Proposals")


def test_what_each_agent_sees_is_a_summary_and_folded_details_a_few_screens_tall(page: Page):
    page.get_by_role("link", name="What each agent sees").click()
    summary = page.locator("table.summary")
    expect(summary.locator("a", has_text="codex")).to_have_attribute("href", "#target-codex")
    expect(page.locator("details.history summary")).to_contain_text("1 fact superseded or demoted")
    expect(page.locator("#target-codex details.left-out")).not_to_have_attribute("open", "")
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height <= 3 * 900, height  # three screens at most for three targets (a newcomer's was 14,500 px)


def test_a_writer_is_shown_whole_in_its_column(page: Page, overrides):
    with PersonaStore.from_settings(load_settings(overrides=overrides),
                                    writer="import:instructions:/home/someone/work/AGENTS.md") as store:
        store.add("Writes tests before the fix.", topic="workflow")
    page.reload()
    cell = page.locator("tr", has_text="Writes tests before the fix.").locator("td.writer")
    expect(cell).to_have_text("import:AGENTS.md")
    assert cell.evaluate("cell => cell.scrollWidth <= cell.clientWidth"), "the label is cut"
