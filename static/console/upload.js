// Folder import: browsers send only each file's base name, so the path of every picked
// file inside its folder goes along as a field of its own, in the same order.
(function () {
  "use strict";
  var form = document.getElementById("import-form");
  var folder = document.getElementById("import-folder");
  if (!form || !folder) { return; }
  folder.addEventListener("change", function () {
    Array.prototype.slice.call(form.querySelectorAll("input[name=folder_path]")).forEach(
      function (old) { old.remove(); }
    );
    Array.prototype.forEach.call(folder.files, function (file) {
      var path = document.createElement("input");
      path.type = "hidden";
      path.name = "folder_path";
      path.value = file.webkitRelativePath || file.name;
      form.appendChild(path);
    });
  });
})();
