// The copy button of a new key; the page works without it (select and copy).
document.addEventListener("DOMContentLoaded", () => {
  const b = document.getElementById("copy-key");
  if (!b) return;
  b.addEventListener("click", async () => {
    const input = document.getElementById(b.dataset.copy);
    input.select();
    try {
      await navigator.clipboard.writeText(input.value);
    } catch {
      document.execCommand("copy");
    }
    document.getElementById("copied").textContent = "Copied";
  });
});
